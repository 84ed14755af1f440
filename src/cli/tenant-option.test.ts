import { Command } from 'commander';
import { UsageError } from './exit-codes.js';
import { addTenantOption, tenantsOf } from './tenant-option.js';

describe('--tenant', () => {
  const parse = (args: string[]) =>
    addTenantOption(new Command('x'), 'things')
      .exitOverride()
      .parse(args, { from: 'user' })
      .opts<{ tenant?: string[] }>();

  it('collects repeated values, - included, for the action to read', () => {
    const flags = parse(['--tenant', 'acme,-', '--tenant', 'globex', '--tenant=initech']);
    expect(tenantsOf(flags)).toEqual(['acme', null, 'globex', 'initech']);
    expect(tenantsOf(parse([]))).toBeUndefined();
  });

  it('refuses an empty tenant id as invalid input (exit 2), naming the flag', () => {
    for (const args of [
      ['--tenant', ''],
      ['--tenant', 'acme,'],
      ['--tenant', 'acme', '--tenant', ' '],
    ]) {
      const flags = parse(args);
      expect(() => tenantsOf(flags)).toThrow(UsageError);
      expect(() => tenantsOf(flags)).toThrow(
        /^--tenant: an empty tenant id: give tenant names \(a-z, 0-9\), or - for records of no tenant$/,
      );
    }
  });

  it('says what it selects in the help', () => {
    const option = addTenantOption(new Command('x'), 'dead letters').options[0]!;
    expect(option.flags).toBe('--tenant <tenants>');
    expect(option.description).toBe(
      'only dead letters of these tenants (comma-separated, repeatable; - for those of no tenant)',
    );
  });
});
