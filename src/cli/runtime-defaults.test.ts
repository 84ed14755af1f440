import {
  missingRuntimeDefaults,
  reexecCommand,
  RUNTIME_ENV,
  RUNTIME_NODE_FLAGS,
  shouldReexec,
} from './runtime-defaults.js';

describe('runtime defaults of docstream run', () => {
  it('lists what is missing and keeps what the user set, in the environment or as a flag', () => {
    expect(missingRuntimeDefaults({}, [])).toEqual({
      env: { ...RUNTIME_ENV },
      flags: ['--max-semi-space-size=2'],
    });
    expect(
      missingRuntimeDefaults({ MALLOC_ARENA_MAX: '8', NODE_OPTIONS: '--max_semi_space_size=64' }, []),
    ).toEqual({ env: { MALLOC_TRIM_THRESHOLD_: '131072', MALLOC_MMAP_THRESHOLD_: '65536' }, flags: [] });
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

  it('starts again with what is missing added, what the user set kept, and the mark that stops a third start', () => {
    const { args, env } = reexecCommand(
      '/usr/bin/node',
      ['--enable-source-maps'],
      ['/usr/bin/node', '/app/dist/cli/index.js', 'run', '--config', 'c.json'],
      { MALLOC_ARENA_MAX: '4', HOME: '/home/u' },
    );
    expect(args).toEqual([
      '--enable-source-maps',
      ...RUNTIME_NODE_FLAGS,
      '/app/dist/cli/index.js',
      'run',
      '--config',
      'c.json',
    ]);
    expect(env).toEqual({
      HOME: '/home/u',
      MALLOC_ARENA_MAX: '4',
      MALLOC_TRIM_THRESHOLD_: RUNTIME_ENV.MALLOC_TRIM_THRESHOLD_,
      MALLOC_MMAP_THRESHOLD_: RUNTIME_ENV.MALLOC_MMAP_THRESHOLD_,
      _DOCSTREAM_RUNTIME_REEXEC: '1',
    });
    expect(shouldReexec(['node', 'docstream', 'run'], env, false)).toBe(false);
  });
});
