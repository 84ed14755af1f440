/**
 * V8's CPU profiler started and stopped from inside a process (`node:inspector`), so that a
 * benchmark profile covers the measured documents only, not start-up and warm-up as
 * `node --cpu-prof` would. Used by the connector's probe (bench-probe.ts) and by the floor.
 */
import fs from 'node:fs';
import inspector from 'node:inspector';

export class InProcessProfiler {
  private session: inspector.Session | null = null;

  async start(): Promise<void> {
    if (this.session) return;
    this.session = new inspector.Session();
    this.session.connect();
    await this.post('Profiler.enable');
    await this.post('Profiler.start');
  }

  /** Stops a started profile and writes it to `file` (a .cpuprofile, as `--cpu-prof` writes). */
  async stop(file: string): Promise<void> {
    if (!this.session) return;
    const { profile } = await this.post<{ profile: unknown }>('Profiler.stop');
    this.session.disconnect();
    this.session = null;
    fs.writeFileSync(file, JSON.stringify(profile));
  }

  private post<T>(method: string): Promise<T> {
    const session = this.session;
    return new Promise((resolve, reject) => {
      if (!session) return reject(new Error('the profiler is not started'));
      session.post(method, (err, result) => (err ? reject(err) : resolve(result as T)));
    });
  }
}
