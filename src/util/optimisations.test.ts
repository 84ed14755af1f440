import { SettingError } from './setting-error.js';
import {
  checkedOptimisationsOff,
  OPTIMISATION_NAMES,
  OPTIMISATIONS_OFF_ENV,
  optimisationOn,
  parseOptimisationsOff,
} from './optimisations.js';

describe('DOCSTREAM_OPTIMISATIONS_OFF', () => {
  it('switches off the names listed, and only those', () => {
    const env = { [OPTIMISATIONS_OFF_ENV]: ' packed-state-index, kafkajs-paused-fetch ' };
    expect(checkedOptimisationsOff(env)).toEqual(['packed-state-index', 'kafkajs-paused-fetch']);
    expect(optimisationOn('packed-state-index', env)).toBe(false);
    expect(optimisationOn('kafkajs-paused-fetch', env)).toBe(false);
    expect(optimisationOn('runtime-settings', env)).toBe(true);
  });

  it('switches every one off with all, and none when unset or empty', () => {
    expect(checkedOptimisationsOff({ [OPTIMISATIONS_OFF_ENV]: 'all' })).toEqual(OPTIMISATION_NAMES);
    expect(checkedOptimisationsOff({})).toEqual([]);
    expect(checkedOptimisationsOff({ [OPTIMISATIONS_OFF_ENV]: '' })).toEqual([]);
    for (const name of OPTIMISATION_NAMES) expect(optimisationOn(name, {})).toBe(true);
  });

  it('refuses a word that names no optimisation, naming it and the names there are', () => {
    const env = { [OPTIMISATIONS_OFF_ENV]: 'packed-state-index,fast-mode' };
    expect(parseOptimisationsOff(env[OPTIMISATIONS_OFF_ENV]).unknown).toEqual(['fast-mode']);
    expect(() => checkedOptimisationsOff(env)).toThrow(SettingError);
    expect(() => checkedOptimisationsOff(env)).toThrow(
      /DOCSTREAM_OPTIMISATIONS_OFF: fast-mode is not an optimisation; the names are runtime-settings, .*kafkajs-group-readings \(or all\)/,
    );
  });
});
