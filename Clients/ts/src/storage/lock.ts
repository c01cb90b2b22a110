/** A first-come first-served lock for asynchronous work: `run` calls `body` once every earlier `run` has ended. */
export class AsyncLock {
    private tail: Promise<void> = Promise.resolve();

    run<T>(body: () => Promise<T>): Promise<T> {
        const result = this.tail.then(body, body);
        this.tail = result.then(
            () => undefined,
            () => undefined
        );
        return result;
    }
}
