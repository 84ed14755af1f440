import { missingRuntimeDefaults, RUNTIME_ENV, shouldReexec } from './runtime-defaults.js';

describe('runtime defaults of docstream run', () => {
  it('lists what is missing and keeps what the user set, in the environment or as a flag', () => {
    expect(missingRuntimeDefaults({}, [])).toEqual({
      env: { ...RUNTIME_ENV },
      flags: ['--max-semi-space-size=2'],
    });
    expect(
      missingRuntimeDefaults({ MALLOC_ARENA_MAX: '8', NODE_OPTIONS: '--max_semi_space_size=64' }, []),
    ).toEqual({ env: { MALLOC_TRIM_THRESHOLD_: '131072' }, flags: [] });
    expect(missingRuntimeDefaults({ ...RUNTIME_ENV }, ['--max-semi-space-size=16'])).toEqual({
      env: {},
      flags: [],
    });
  });

  it('starts again only for run, once, and never under an IPC supervisor', () => {
    const argv = (cmd: string) => ['node', 'docstream', cmd];
    expect(shouldReexec(argv('run'), {}, false)).toBe(true);
    expect(shouldReexec(argv('demo'), {}, false)).toBe(false);
    expect(shouldReexec(argv('run'), { _DOCSTREAM_RUNTIME_REEXEC: '1' }, false)).toBe(false);
    expect(shouldReexec(argv('run'), {}, true)).toBe(false);
    expect(
      shouldReexec(argv('run'), { ...RUNTIME_ENV, NODE_OPTIONS: '--max-semi-space-size=2' }, false),
    ).toBe(false);
  });
});
