/**
 * Runs tasks one at a time per key, in the order they were given, while tasks of different keys run
 * at once. The connector admits the records of one `event_id` this way: a second copy waits for the
 * first admission, then sees what it recorded (one admission per `event_id` at a time). A key is
 * forgotten once its last task ends.
 */
export class KeyedSerial {
  private readonly tails = new Map<string, Promise<void>>();

  /** Runs `task` after every earlier task of `key` settled (fulfilled or not); resolves with its result. */
  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const before = this.tails.get(key);
    const result = before ? before.then(task) : task();
    const forget = () => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    };
    const tail: Promise<void> = result.then(forget, forget);
    this.tails.set(key, tail);
    return result;
  }

  /** Keys with a task running or waiting. */
  get size(): number {
    return this.tails.size;
  }
}
