import { ConnectorMetrics } from './metrics.js';

describe('ConnectorMetrics', () => {
  it("shows the limiter's rate and ceiling as they are when scraped, without waiting for a refresh", async () => {
    const metrics = new ConnectorMetrics({ defaultMetrics: false });
    let rate = 4;
    let ceiling = 10;
    metrics.observeApi({
      currentRate: () => rate,
      currentCeiling: () => ceiling,
      limitFound: () => undefined,
    });
    const gauge = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    let text = await metrics.registry.metrics();
    expect(gauge(text, 'docstream_api_limiter_rate')).toBe(4);
    expect(gauge(text, 'docstream_api_limiter_ceiling')).toBe(10);
    // A group join changed this instance's share.
    rate = 2.5;
    ceiling = 5;
    text = await metrics.registry.metrics();
    expect(gauge(text, 'docstream_api_limiter_rate')).toBe(2.5);
    expect(gauge(text, 'docstream_api_limiter_ceiling')).toBe(5);
  });
});
