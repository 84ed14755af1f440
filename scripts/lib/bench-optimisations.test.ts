import {
  BENCHED_OPTIMISATIONS,
  parseVariants,
  roundOrder,
  summarise,
  type VariantRun,
} from './bench-optimisations.js';

const run = (variant: VariantRun['variant'], r: number, flood: number, rss: number): VariantRun => ({
  variant,
  round: r,
  load: 1,
  heldDocs: 1000,
  idleTreeMb: 100,
  loadedTreeMb: 110,
  rssBytesPerDoc: rss,
  floodCpuMsPerDoc: flood,
  floodSettled: 10,
  floodSeconds: 1,
  trickleCpuMsPerDoc: 5,
  trickleSettled: 10,
});

describe('the optimisations bench', () => {
  it('measures all on and every optimisation the file:// runs exercise, or those named', () => {
    expect(parseVariants('all')).toEqual(['all-on', ...BENCHED_OPTIMISATIONS]);
    expect(BENCHED_OPTIMISATIONS).not.toContain('s3-signed-get');
    expect(parseVariants('packed-state-index')).toEqual(['all-on', 'packed-state-index']);
    // Another build's CLI: measured as `before`, right after all on.
    expect(parseVariants('packed-state-index', true)).toEqual(['all-on', 'before', 'packed-state-index']);
    expect(parseVariants('all', true).slice(0, 2)).toEqual(['all-on', 'before']);
    expect(() => parseVariants('packed-index')).toThrow(/packed-index is not an optimisation/);
    // Tracing on, beside all on: what traces cost.
    expect(parseVariants('tracing')).toEqual(['all-on', 'tracing']);
  });

  it('alternates the order from round to round', () => {
    const v = parseVariants('packed-state-index,runtime-settings');
    expect(roundOrder(v, 1)).toEqual(['all-on', 'packed-state-index', 'runtime-settings']);
    expect(roundOrder(v, 2)).toEqual(['runtime-settings', 'packed-state-index', 'all-on']);
  });

  it("gives each variant's median, spread and change against all on's median", () => {
    const s = summarise(
      [
        run('all-on', 1, 2, 100),
        run('all-on', 2, 2.2, 120),
        run('packed-state-index', 1, 2.4, 1200),
        run('packed-state-index', 2, 2.6, 1300),
      ],
      ['all-on', 'packed-state-index'],
    );
    expect(s[0]!.floodCpuMsPerDoc).toMatchObject({ median: 2.1, min: 2, max: 2.2, changePercent: null });
    expect(s[1]!.floodCpuMsPerDoc).toMatchObject({ median: 2.5, min: 2.4, max: 2.6, changePercent: 19 });
    expect(s[1]!.rssBytesPerDoc).toMatchObject({ median: 1250, changePercent: 1036.4 });
  });
});
