import { CRASH_AFTER_PUBLISH_ENV, crashPointFromEnv } from './crash-point.js';

describe('crashPointFromEnv (the resilience suite crash point)', () => {
  it('is absent unless the variable is set', () => {
    let installed = 0;
    expect(crashPointFromEnv({}, { onArm: () => (installed += 1) })).toBeNull();
    expect(
      crashPointFromEnv({ [CRASH_AFTER_PUBLISH_ENV]: ' ' }, { onArm: () => (installed += 1) }),
    ).toBeNull();
    expect(installed).toBe(0);
  });

  it('refuses a value that is not a probability', () => {
    for (const bad of ['yes', '-0.1', '1.5'])
      expect(() => crashPointFromEnv({ [CRASH_AFTER_PUBLISH_ENV]: bad }, { onArm: () => undefined })).toThrow(
        /probability/,
      );
  });

  it('kills after a publication with the probability given', () => {
    let kills = 0;
    const draws = [0.5, 0.05, 0.2];
    const point = crashPointFromEnv(
      { [CRASH_AFTER_PUBLISH_ENV]: '0.1' },
      { random: () => draws.shift()!, kill: () => (kills += 1), onArm: () => undefined },
    )!;
    point.afterPublish();
    expect(kills).toBe(0);
    point.afterPublish();
    expect(kills).toBe(1);
    point.afterPublish();
    expect(kills).toBe(1);
  });

  it('at 0 never kills on its own; the arming signal kills once, at the next publication', () => {
    let kills = 0;
    let arm: () => void = () => undefined;
    const point = crashPointFromEnv(
      { [CRASH_AFTER_PUBLISH_ENV]: '0' },
      { random: () => 0, kill: () => (kills += 1), onArm: (a) => (arm = a) },
    )!;
    point.afterPublish();
    expect(kills).toBe(0);
    arm();
    expect(kills).toBe(0);
    point.afterPublish();
    point.afterPublish();
    expect(kills).toBe(1);
  });
});
