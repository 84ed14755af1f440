/**
 * The finished documents of one state partition (see `finished-index.ts`): typed arrays (columns),
 * an open-addressing hash table and a byte arena for text that is not a UUID.
 */
import { uuidString } from './binary.js';
import { awaitableBits, awaitableList, type Awaitable } from './document-state.js';
import { packId, type PackedId } from './packed-id.js';

export interface FinishedEntry {
  event_id: string;
  submission_id: string;
  status: 'DONE' | 'FAILED';
  awaited: Awaitable[];
  published: Awaitable[];
  /** Milliseconds since the epoch; kept to the second. */
  finished_at: number;
  /** Replay generation last re-emitted (0: none). */
  generation: number;
  /** Fingerprint of the event's blob (`blob-fingerprint.ts`); 0: unknown. */
  blob: number;
}

const FAILED = 1;
const SID_TEXT = 2;
const KEY_TEXT = 4;
const DEAD = 8;
const GROWTH = 1.5;
const MAX_LOAD = 0.7;

/** FNV-1a with a final avalanche, so the low bits a power-of-two table uses are well spread. */
function hashBytes(bytes: Uint8Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.length; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

export class PartitionIndex {
  /** Entries used (live and dead); columns hold `capacity`. */
  private used = 0;
  live = 0;
  private capacity: number;
  private hashes: Uint32Array;
  private keys: Uint8Array;
  private sids: Uint8Array;
  private flags: Uint8Array;
  private results: Uint8Array;
  private finished: Uint32Array;
  private gens: Uint16Array;
  private blobs: Uint32Array;
  /** Entry index + 1 per slot; 0 = empty. */
  private table: Int32Array;
  private arena: Buffer;
  private arenaUsed = 0;

  constructor(capacity = 64) {
    this.capacity = capacity;
    this.hashes = new Uint32Array(capacity);
    this.keys = new Uint8Array(capacity * 16);
    this.sids = new Uint8Array(capacity * 16);
    this.flags = new Uint8Array(capacity);
    this.results = new Uint8Array(capacity);
    this.finished = new Uint32Array(capacity);
    this.gens = new Uint16Array(capacity);
    this.blobs = new Uint32Array(capacity);
    this.table = new Int32Array(tableSizeFor(capacity));
    this.arena = Buffer.alloc(0);
  }

  get(eventId: string): FinishedEntry | undefined {
    const key = packId(eventId);
    const slot = this.find(key, hashBytes(key.bytes));
    if (slot < 0) return undefined;
    return this.entry(this.table[slot]! - 1, eventId);
  }

  set(entry: FinishedEntry): void {
    this.setPacked(
      packId(entry.event_id),
      packId(entry.submission_id),
      entry.status === 'FAILED',
      awaitableBits(entry.awaited) | (awaitableBits(entry.published) << 4),
      Math.floor(entry.finished_at / 1000),
      entry.generation,
      entry.blob,
    );
  }

  /** `set` from ids already packed (the restore path: no strings made). `key`/`sid` are copied. */
  setPacked(
    key: PackedId,
    sid: PackedId,
    failed: boolean,
    results: number,
    finishedSeconds: number,
    generation = 0,
    blob = 0,
  ): void {
    const hash = hashBytes(key.bytes);
    const slot = this.find(key, hash);
    let at: number;
    if (slot >= 0) at = this.table[slot]! - 1;
    else {
      if (this.used === this.capacity) this.grow();
      at = this.used++;
      this.live++;
      this.hashes[at] = hash;
      this.flags[at] = 0;
      this.storeId(this.keys, at, key);
      if (!key.uuid) this.flags[at]! |= KEY_TEXT;
      this.insertSlot(hash, at);
    }
    this.flags[at] = (this.flags[at]! & KEY_TEXT) | (failed ? FAILED : 0) | (sid.uuid ? 0 : SID_TEXT);
    this.storeId(this.sids, at, sid);
    this.results[at] = results;
    this.finished[at] = finishedSeconds;
    this.gens[at] = generation;
    this.blobs[at] = blob;
  }

  delete(eventId: string): boolean {
    const key = packId(eventId);
    const slot = this.find(key, hashBytes(key.bytes));
    if (slot < 0) return false;
    this.flags[this.table[slot]! - 1]! |= DEAD;
    this.removeSlot(slot);
    this.live--;
    // Dead entries and their text are reclaimed by rebuilding once they are a third of the columns.
    if (this.used > 1024 && this.live < (this.used * 2) / 3) this.rebuild(() => false);
    return true;
  }

  /** Removes entries finished before `beforeSeconds`, reporting each; returns how many. */
  expire(beforeSeconds: number, onExpired: (eventId: string) => void): number {
    let expired = 0;
    for (let i = 0; i < this.used; i++) {
      if ((this.flags[i]! & DEAD) === 0 && this.finished[i]! < beforeSeconds) expired++;
    }
    if (expired === 0) return 0;
    this.rebuild((i, arena) => {
      if (this.finished[i]! >= beforeSeconds) return false;
      onExpired(this.readId(this.keys, i, (this.flags[i]! & KEY_TEXT) !== 0, arena));
      return true;
    });
    return expired;
  }

  /** Every live entry (for tests and diagnostics; allocates an object per entry). */
  *entries(): Generator<FinishedEntry> {
    for (let i = 0; i < this.used; i++) {
      if ((this.flags[i]! & DEAD) !== 0) continue;
      yield this.entry(i, this.readId(this.keys, i, (this.flags[i]! & KEY_TEXT) !== 0));
    }
  }

  bytes(): number {
    return (
      this.hashes.byteLength +
      this.keys.byteLength +
      this.sids.byteLength +
      this.flags.byteLength +
      this.results.byteLength +
      this.finished.byteLength +
      this.gens.byteLength +
      this.blobs.byteLength +
      this.table.byteLength +
      this.arena.length
    );
  }

  private entry(i: number, eventId: string): FinishedEntry {
    const flags = this.flags[i]!;
    const results = this.results[i]!;
    return {
      event_id: eventId,
      submission_id: this.readId(this.sids, i, (flags & SID_TEXT) !== 0),
      status: flags & FAILED ? 'FAILED' : 'DONE',
      awaited: awaitableList(results & 0xf),
      published: awaitableList(results >> 4),
      finished_at: this.finished[i]! * 1000,
      generation: this.gens[i]!,
      blob: this.blobs[i]!,
    };
  }

  /** Slot of the live entry with this key, or -1. Linear probing. */
  private find(key: PackedId, hash: number): number {
    const mask = this.table.length - 1;
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const ref = this.table[slot]!;
      if (ref === 0) return -1;
      const i = ref - 1;
      if (this.hashes[i] === hash && this.sameKey(i, key)) return slot;
    }
  }

  private sameKey(i: number, key: PackedId): boolean {
    const text = (this.flags[i]! & KEY_TEXT) !== 0;
    if (text !== (key.uuid === null)) return false;
    if (!text) {
      const keys = this.keys;
      const base = i * 16;
      for (let b = 0; b < 16; b++) if (keys[base + b] !== key.bytes[b]) return false;
      return true;
    }
    const { offset, length } = this.textRef(this.keys, i);
    return (
      length === key.bytes.length && this.arena.compare(key.bytes, 0, length, offset, offset + length) === 0
    );
  }

  private insertSlot(hash: number, at: number): void {
    if (this.live > this.table.length * MAX_LOAD) this.rehash(this.table.length * 2);
    const mask = this.table.length - 1;
    let slot = hash & mask;
    while (this.table[slot] !== 0) slot = (slot + 1) & mask;
    this.table[slot] = at + 1;
  }

  /** Backward-shift deletion: keeps every probe chain unbroken without tombstone slots. */
  private removeSlot(slot: number): void {
    const mask = this.table.length - 1;
    let hole = slot;
    for (let next = (hole + 1) & mask; this.table[next] !== 0; next = (next + 1) & mask) {
      const home = this.hashes[this.table[next]! - 1]! & mask;
      // Move `next` into the hole unless its home lies cyclically in (hole, next].
      const between = hole <= next ? home > hole && home <= next : home > hole || home <= next;
      if (!between) {
        this.table[hole] = this.table[next]!;
        hole = next;
      }
    }
    this.table[hole] = 0;
  }

  private rehash(size: number): void {
    this.table = new Int32Array(size);
    const mask = size - 1;
    for (let i = 0; i < this.used; i++) {
      if ((this.flags[i]! & DEAD) !== 0) continue;
      let slot = this.hashes[i]! & mask;
      while (this.table[slot] !== 0) slot = (slot + 1) & mask;
      this.table[slot] = i + 1;
    }
  }

  private grow(): void {
    this.resize(Math.ceil(this.capacity * GROWTH) + 16);
  }

  private resize(capacity: number): void {
    const copy = <T extends Uint8Array | Uint16Array | Uint32Array>(
      from: T,
      make: (n: number) => T,
      width: number,
    ): T => {
      const to = make(capacity * width);
      to.set(from.subarray(0, Math.min(this.used, capacity) * width));
      return to;
    };
    this.hashes = copy(this.hashes, (n) => new Uint32Array(n), 1);
    this.keys = copy(this.keys, (n) => new Uint8Array(n), 16);
    this.sids = copy(this.sids, (n) => new Uint8Array(n), 16);
    this.flags = copy(this.flags, (n) => new Uint8Array(n), 1);
    this.results = copy(this.results, (n) => new Uint8Array(n), 1);
    this.finished = copy(this.finished, (n) => new Uint32Array(n), 1);
    this.gens = copy(this.gens, (n) => new Uint16Array(n), 1);
    this.blobs = copy(this.blobs, (n) => new Uint32Array(n), 1);
    this.capacity = capacity;
  }

  /** Rewrites the columns without dead entries and those `remove` picks, and shrinks the arena. */
  private rebuild(remove: (i: number, arena: Buffer) => boolean): void {
    const old = {
      arena: this.arena,
      keys: this.keys,
      sids: this.sids,
    };
    this.arena = Buffer.alloc(0);
    this.arenaUsed = 0;
    let kept = 0;
    for (let i = 0; i < this.used; i++) {
      if ((this.flags[i]! & DEAD) !== 0 || remove(i, old.arena)) continue;
      this.hashes[kept] = this.hashes[i]!;
      this.flags[kept] = this.flags[i]!;
      this.results[kept] = this.results[i]!;
      this.finished[kept] = this.finished[i]!;
      this.gens[kept] = this.gens[i]!;
      this.blobs[kept] = this.blobs[i]!;
      this.moveId(old.keys, old.arena, i, this.keys, kept, (this.flags[kept]! & KEY_TEXT) !== 0);
      this.moveId(old.sids, old.arena, i, this.sids, kept, (this.flags[kept]! & SID_TEXT) !== 0);
      kept++;
    }
    this.used = kept;
    this.live = kept;
    this.resize(Math.max(64, Math.ceil(kept * 1.25)));
    this.rehash(tableSizeFor(this.capacity));
  }

  private moveId(
    fromCol: Uint8Array,
    fromArena: Buffer,
    i: number,
    toCol: Uint8Array,
    at: number,
    text: boolean,
  ): void {
    if (!text) {
      toCol.copyWithin(at * 16, i * 16, i * 16 + 16);
      return;
    }
    const view = Buffer.from(fromCol.buffer, fromCol.byteOffset + i * 16, 6);
    const offset = view.readUInt32LE(0);
    const length = view.readUInt16LE(4);
    this.writeText(toCol, at, fromArena.subarray(offset, offset + length));
  }

  private storeId(col: Uint8Array, at: number, id: PackedId): void {
    if (id.uuid) col.set(id.uuid, at * 16);
    else this.writeText(col, at, id.bytes);
  }

  /** Appends text to the arena and records (offset, length) in the entry's 16-byte cell. */
  private writeText(col: Uint8Array, at: number, bytes: Uint8Array): void {
    if (this.arenaUsed + bytes.length > this.arena.length) {
      const next = Buffer.alloc(Math.max(1024, Math.ceil((this.arenaUsed + bytes.length) * GROWTH)));
      this.arena.copy(next, 0, 0, this.arenaUsed);
      this.arena = next;
    }
    this.arena.set(bytes, this.arenaUsed);
    const cell = Buffer.from(col.buffer, col.byteOffset + at * 16, 6);
    cell.writeUInt32LE(this.arenaUsed, 0);
    cell.writeUInt16LE(bytes.length, 4);
    this.arenaUsed += bytes.length;
  }

  private textRef(col: Uint8Array, i: number): { offset: number; length: number } {
    const cell = Buffer.from(col.buffer, col.byteOffset + i * 16, 6);
    return { offset: cell.readUInt32LE(0), length: cell.readUInt16LE(4) };
  }

  private readId(col: Uint8Array, i: number, text: boolean, arena = this.arena): string {
    if (!text) return uuidString(col, i * 16);
    const { offset, length } = this.textRef(col, i);
    return arena.toString('utf8', offset, offset + length);
  }
}

function tableSizeFor(capacity: number): number {
  let size = 64;
  while (size * MAX_LOAD < capacity) size *= 2;
  return size;
}
