import { NO_TENANT, tenantProblem, tenantSelected, tenantSelectionOf } from './tenant-filter.js';

describe('tenantSelectionOf: the values of --tenant', () => {
  it('splits comma-separated, repeated values, trims them and keeps each tenant once', () => {
    expect(tenantSelectionOf(['acme, globex', 'acme', 'initech'])).toEqual({
      selection: ['acme', 'globex', 'initech'],
    });
  });

  it(`reads ${NO_TENANT} as "no tenant", alone or beside names`, () => {
    expect(tenantSelectionOf([NO_TENANT])).toEqual({ selection: [null] });
    expect(tenantSelectionOf([`acme,${NO_TENANT}`])).toEqual({ selection: ['acme', null] });
  });

  it('keeps a tenant named like a word for "none" a tenant', () => {
    // Tenant names are a-z and 0-9 only: no name can be read as the no-tenant spelling.
    expect(tenantSelectionOf(['none,null,default'])).toEqual({ selection: ['none', 'null', 'default'] });
  });

  it.each([[''], [' '], ['acme,'], [',acme'], ['acme,,globex']])(
    'refuses an empty tenant id in %j',
    (value) => {
      expect(tenantSelectionOf(['globex', value])).toEqual({
        problem: `an empty tenant id: give tenant names (a-z, 0-9), or ${NO_TENANT} for records of no tenant`,
      });
    },
  );

  it('refuses what cannot be a tenant name, echoed cut and escaped', () => {
    expect(tenantSelectionOf(['ACME'])).toEqual({
      problem: `"ACME" is not a tenant name (1..61 characters a-z and 0-9), nor ${NO_TENANT} for records of no tenant`,
    });
    expect(tenantProblem('a'.repeat(62))).toMatch(/^"a{40}"… is not a tenant name/);
    const hostile = tenantProblem('\u001b]0;x\u0007')!;
    // eslint-disable-next-line no-control-regex -- the point: no raw control character is echoed
    expect(hostile).not.toMatch(/[\u0000-\u001f\u007f]/);
    expect(tenantProblem('--')).toMatch(/^"--" is not a tenant name/);
  });
});

describe('tenantSelected', () => {
  it('selects every record without a selection', () => {
    expect(tenantSelected('acme', undefined)).toBe(true);
    expect(tenantSelected(null, undefined)).toBe(true);
    expect(tenantSelected(null, [])).toBe(true);
  });

  it('selects a named tenant by its name, and records of no tenant by null only', () => {
    expect(tenantSelected('acme', ['acme'])).toBe(true);
    expect(tenantSelected('globex', ['acme'])).toBe(false);
    expect(tenantSelected(null, ['acme'])).toBe(false);
    expect(tenantSelected(null, [null])).toBe(true);
    expect(tenantSelected('acme', [null])).toBe(false);
  });
});
