/**
 * The tenant directory as it is now, reloaded without a restart. A mounted Kubernetes Secret is
 * updated by swapping a symlink (`..data`) atomically, which `fs.watch` on the file itself does not
 * see reliably; so the file and every secret it names are read again on an interval, and a change
 * in the file's folder seen by `fs.watch` reloads at once. A new directory that cannot be used is
 * refused with one error line (again only when its reason changes) and the previous one stays. Every
 * change is logged with the tenants added, changed and removed: names only, never a secret.
 */
import { watch, type FSWatcher } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from '../observability/logger.js';
import type { CellAddress } from '../client/cells.js';
import {
  EMPTY_DIRECTORY,
  diffDirectories,
  isEmptyDiff,
  readDirectory,
  TenantDirectoryError,
  type DirectoryDiff,
  type TenantDirectory,
} from './directory.js';

export interface TenantDirectorySourceOptions {
  file: string;
  /** Cells known beside the file's own (`api.cells` and the built-in ones). */
  cells: Record<string, CellAddress>;
  /** How often the file and its secrets are read again. */
  intervalMs: number;
  /** `api.allowInsecureHttp`, for the cells' addresses. */
  allowInsecureHttp?: boolean;
  logger: Logger;
  /** Reads the directory (default: `readDirectory`); tests replace it. */
  read?: (
    file: string,
    cells: Record<string, CellAddress>,
    allowInsecureHttp: boolean,
  ) => Promise<TenantDirectory>;
}

export type DirectoryListener = (directory: TenantDirectory, diff: DirectoryDiff) => void;

export class TenantDirectorySource {
  private directory: TenantDirectory;
  private readonly listeners: DirectoryListener[] = [];
  private timer: NodeJS.Timeout | undefined;
  private watcher: FSWatcher | undefined;
  private soon: NodeJS.Timeout | undefined;
  private reloading: Promise<void> | undefined;
  private again = false;
  /** The reason the last reload was refused, so that the same reason is logged once. */
  private lastProblem: string | null = null;
  private readonly read: NonNullable<TenantDirectorySourceOptions['read']>;

  /** Holds no tenant until `load` has read the file. */
  constructor(private readonly options: TenantDirectorySourceOptions) {
    this.directory = EMPTY_DIRECTORY;
    this.read = options.read ?? readDirectory;
  }

  /**
   * The first read, at start-up: throws a TenantDirectoryError when the file cannot be used (the
   * start fails, naming the problem); listeners hear of every tenant as added.
   */
  async load(): Promise<void> {
    const first = await this.read(
      this.options.file,
      this.options.cells,
      this.options.allowInsecureHttp ?? false,
    );
    const diff = diffDirectories(this.directory, first);
    this.directory = first;
    this.options.logger.info(
      { file: this.options.file, tenants: [...first.tenants.keys()].sort() },
      'tenant directory read',
    );
    for (const listener of this.listeners) listener(first, diff);
  }

  get current(): TenantDirectory {
    return this.directory;
  }

  onChange(listener: DirectoryListener): void {
    this.listeners.push(listener);
  }

  /** Starts reading the file on the interval and on changes of its folder. */
  start(): void {
    this.timer = setInterval(() => this.reloadQuietly(), this.options.intervalMs);
    this.timer.unref();
    try {
      this.watcher = watch(dirname(this.options.file), { persistent: false }, () => this.reloadSoon());
      this.watcher.on('error', () => this.watcher?.close());
    } catch {
      // No watch on this file system: the interval alone reloads.
    }
  }

  stop(): void {
    clearInterval(this.timer);
    clearTimeout(this.soon);
    this.watcher?.close();
  }

  /** Reads the directory again now (one read at a time; a request meanwhile reads once more after). */
  reload(): Promise<void> {
    if (this.reloading) {
      this.again = true;
      return this.reloading;
    }
    this.reloading = this.readAndApply().finally(() => {
      this.reloading = undefined;
      if (this.again) {
        this.again = false;
        this.reloadQuietly();
      }
    });
    return this.reloading;
  }

  /** A reload from a timer: its failures are logged in `readAndApply`, a listener's are its own. */
  private reloadQuietly(): void {
    this.reload().catch(() => undefined);
  }

  /** A burst of changes (a symlink swap is several) reloads once. */
  private reloadSoon(): void {
    clearTimeout(this.soon);
    this.soon = setTimeout(() => this.reloadQuietly(), 100);
    this.soon.unref();
  }

  private async readAndApply(): Promise<void> {
    const { file, logger } = this.options;
    let next: TenantDirectory;
    try {
      next = await this.read(file, this.options.cells, this.options.allowInsecureHttp ?? false);
    } catch (err) {
      const problem =
        err instanceof TenantDirectoryError ? err.message : `${file}: ${(err as Error).message}`;
      if (problem !== this.lastProblem)
        logger.error(
          { file, err: problem, tenants: this.directory.tenants.size },
          'tenant directory not reloaded: the new file cannot be used; the previous directory stays',
        );
      this.lastProblem = problem;
      return;
    }
    if (this.lastProblem !== null) logger.info({ file }, 'tenant directory can be read again');
    this.lastProblem = null;
    const diff = diffDirectories(this.directory, next);
    if (isEmptyDiff(diff)) return;
    this.directory = next;
    logger.info({ file, ...diff, tenants: next.tenants.size }, 'tenant directory changed');
    for (const listener of this.listeners) listener(next, diff);
  }
}
