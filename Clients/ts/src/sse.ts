import { SyncClientError } from "./errors.js";

/**
 * One server-sent event of `GET /changes` (protocol §9, §15). It exists because the client reads the stream from a
 * `fetch` body itself instead of using `EventSource`, which React Native lacks and which cannot send the bearer token.
 */
export interface ServerEvent {
    /** `change`, `spaces`, or `message` when the server named none. */
    event: string;
    /** The `data:` lines, joined by newlines. */
    data: string;
    /** The last event id seen (sent back as `Last-Event-ID` on reconnection). */
    id: string | undefined;
}

/**
 * Parses `text/event-stream` bytes into events, following the WHATWG rules the client needs (the Swift SDK's
 * `ServerEventParser`): `event`, `data` (joined by newlines), `id` (kept across events), `retry` (the reconnection
 * hint), comment lines, a blank line ends an event, CR, LF or CRLF line ends, bytes split anywhere (even inside a UTF-8
 * sequence: a streaming `TextDecoder`). Bounded: a line, or an event's `event` and `data`, longer than
 * `maximumEventChars` makes `feed` throw `answer_too_large`, so that a stream that never ends its line cannot fill
 * memory (the connection is then dropped and opened again after a backoff).
 */
export class ServerEventParser {
    private readonly decoder = new TextDecoder();
    private buffer = "";
    private event = "";
    private data: string[] = [];
    private dataLength = 0;
    private hasData = false;
    private lastId: string | undefined;
    private afterCR = false;
    private started = false;
    /** The last `retry:` hint, in milliseconds. */
    retry: number | undefined;

    constructor(readonly maximumEventChars = 1024 * 1024) {}

    /** Feeds bytes; answers the events they complete. */
    feed(bytes: Uint8Array): ServerEvent[] {
        let text = this.decoder.decode(bytes, { stream: true });
        if (!this.started && text.length > 0) {
            this.started = true;
            if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
        }
        const events: ServerEvent[] = [];
        let start = 0;
        for (let index = 0; index < text.length; index++) {
            const code = text.charCodeAt(index);
            if (code === 10 && this.afterCR) {
                // The LF of a CRLF whose CR already ended the line.
                this.afterCR = false;
                start = index + 1;
            } else if (code === 10 || code === 13) {
                this.afterCR = code === 13;
                const line = this.buffer + text.slice(start, index);
                this.buffer = "";
                start = index + 1;
                if (line.length > this.maximumEventChars) throw this.overflow("a line");
                const event = this.take(line);
                if (event) events.push(event);
                if (this.event.length + this.dataLength > this.maximumEventChars) throw this.overflow("an event");
            } else {
                this.afterCR = false;
            }
        }
        this.buffer += text.slice(start);
        if (this.buffer.length > this.maximumEventChars) throw this.overflow("a line");
        return events;
    }

    private overflow(what: string): SyncClientError {
        this.buffer = "";
        this.reset();
        const error = SyncClientError.answerTooLarge(200, this.maximumEventChars);
        return new SyncClientError("server", `${what} of the event stream is longer than ${this.maximumEventChars}`, {
            status: 200,
            code: error.code,
            detail: error.detail,
        });
    }

    private reset(): void {
        this.event = "";
        this.data = [];
        this.dataLength = 0;
        this.hasData = false;
    }

    private take(line: string): ServerEvent | undefined {
        if (line === "") {
            const event = this.hasData ? { event: this.event === "" ? "message" : this.event, data: this.data.join("\n"), id: this.lastId } : undefined;
            this.reset();
            return event;
        }
        if (line.startsWith(":")) return undefined;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        switch (field) {
            case "event":
                this.event = value;
                break;
            case "data":
                this.data.push(value);
                this.dataLength += value.length + 1;
                this.hasData = true;
                break;
            case "id":
                if (!value.includes("\u0000")) this.lastId = value;
                break;
            case "retry":
                if (/^\d+$/.test(value)) this.retry = Number(value);
                break;
        }
        return undefined;
    }
}
