import { JsonValue } from "./json.js";

// A small pull tokenizer of JSON read from a byte stream, for answers too big to hold whole (a first sync's group
// answer): the caller walks the outer structure (objects by key, arrays by element) and takes each value it does not
// walk into as one `JSON.parse` of its own bytes, so only the value at hand (one item) is ever held, never the answer.
// The engine's own parser does the real work (numbers, escapes, UTF-8); this file finds where each value ends.

/** The next chunk of the body, undefined at its end. */
export type ChunkSource = () => Promise<Uint8Array | undefined>;

const quote = 0x22;
const backslash = 0x5c;
const comma = 0x2c;
const colon = 0x3a;
const openBrace = 0x7b;
const closeBrace = 0x7d;
const openBracket = 0x5b;
const closeBracket = 0x5d;

function isSpace(byte: number): boolean {
    return byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09;
}

/**
 * Reads JSON from `source` one value at a time. Every malformed input (bad syntax, an early end, bytes after the
 * root value) throws `fail()`'s error; the source's own errors (network, size cap) go through as they are.
 */
export class JsonStreamReader {
    private buffer = new Uint8Array(0);
    private position = 0;
    private ended = false;
    /** Whether the container being walked has had an entry yet (its separator comes before the next), innermost last. */
    private readonly firsts: boolean[] = [];
    private readonly decoder = new TextDecoder();

    constructor(
        private readonly source: ChunkSource,
        private readonly fail: () => Error
    ) {}

    /** The next chunk in place of the current one (the current one is read through); false at the end. */
    private async fill(): Promise<boolean> {
        while (!this.ended) {
            const chunk = await this.source();
            if (chunk === undefined) {
                this.ended = true;
                break;
            }
            if (chunk.byteLength === 0) continue;
            this.buffer = chunk;
            this.position = 0;
            return true;
        }
        this.buffer = new Uint8Array(0);
        this.position = 0;
        return false;
    }

    /** The next byte that is not white space, not consumed; -1 at the end of the body. */
    async peek(): Promise<number> {
        for (;;) {
            const buffer = this.buffer;
            let at = this.position;
            while (at < buffer.length && isSpace(buffer[at]!)) at++;
            this.position = at;
            if (at < buffer.length) return buffer[at]!;
            if (!(await this.fill())) return -1;
        }
    }

    private async expect(byte: number): Promise<void> {
        if ((await this.peek()) !== byte) throw this.fail();
        this.position++;
    }

    /** Enters an object (`{`); its members come from `nextKey`. */
    async beginObject(): Promise<void> {
        await this.expect(openBrace);
        this.firsts.push(true);
    }

    /** The next member's name (its `:` read), or undefined at the object's `}` (read). */
    async nextKey(): Promise<string | undefined> {
        const byte = await this.peek();
        if (byte === closeBrace) {
            this.position++;
            this.firsts.pop();
            return undefined;
        }
        if (!this.firsts[this.firsts.length - 1]) await this.expect(comma);
        this.firsts[this.firsts.length - 1] = false;
        if ((await this.peek()) !== quote) throw this.fail();
        const key = await this.value();
        await this.expect(colon);
        return key as string;
    }

    /** Enters an array (`[`); its elements come from `nextElement`. */
    async beginArray(): Promise<void> {
        await this.expect(openBracket);
        this.firsts.push(true);
    }

    /** Whether another element follows (its `,` read), false at the array's `]` (read). */
    async nextElement(): Promise<boolean> {
        const byte = await this.peek();
        if (byte === closeBracket) {
            this.position++;
            this.firsts.pop();
            return false;
        }
        if (!this.firsts[this.firsts.length - 1]) await this.expect(comma);
        this.firsts[this.firsts.length - 1] = false;
        return true;
    }

    /** The body has nothing after the root value. */
    async end(): Promise<void> {
        if ((await this.peek()) !== -1) throw this.fail();
    }

    /** The next value, whole: its bytes found, then parsed by `JSON.parse`. */
    async value(): Promise<JsonValue> {
        const text = this.decode(await this.valueBytes());
        try {
            return JSON.parse(text) as JsonValue;
        } catch {
            throw this.fail();
        }
    }

    private decode(bytes: Uint8Array): string {
        return this.decoder.decode(bytes);
    }

    /** The bytes of the next value (a string, number, literal, object or array), across chunks. */
    private async valueBytes(): Promise<Uint8Array> {
        // A number or literal ends at the first byte that cannot be part of it; a string at its closing quote; an
        // object or array at the bracket that closes it (brackets inside strings not counted).
        const first = await this.peek();
        if (first === -1 || first === closeBrace || first === closeBracket || first === comma || first === colon) throw this.fail();
        const scalar = first !== openBrace && first !== openBracket && first !== quote;
        const pieces: Uint8Array[] = [];
        let depth = 0;
        let inString = false;
        let escaped = false;
        let start = this.position;
        for (;;) {
            const buffer = this.buffer;
            const length = buffer.length;
            let at = this.position;
            while (at < length) {
                if (inString) {
                    if (escaped) {
                        escaped = false;
                        at++;
                        continue;
                    }
                    // A tight loop to the string's quote or next backslash (most of an item's bytes are in strings).
                    let byte = buffer[at]!;
                    while (byte !== quote && byte !== backslash && ++at < length) byte = buffer[at]!;
                    if (at === length) break;
                    at++;
                    if (byte === backslash) {
                        escaped = true;
                        continue;
                    }
                    inString = false;
                    if (depth === 0) return this.finish(pieces, buffer.subarray(start, at), at);
                    continue;
                }
                const byte = buffer[at]!;
                if (scalar) {
                    if (byte === comma || byte === closeBrace || byte === closeBracket || isSpace(byte)) {
                        return this.finish(pieces, buffer.subarray(start, at), at);
                    }
                } else if (byte === quote) {
                    inString = true;
                } else if (byte === openBrace || byte === openBracket) {
                    depth++;
                } else if (byte === closeBrace || byte === closeBracket) {
                    depth--;
                    if (depth === 0) {
                        at++;
                        return this.finish(pieces, buffer.subarray(start, at), at);
                    }
                }
                at++;
            }
            if (start < length) pieces.push(buffer.subarray(start, length));
            if (!(await this.fill())) {
                if (scalar) return this.finish(pieces, new Uint8Array(0), 0);
                throw this.fail();
            }
            start = 0;
        }
    }

    private finish(pieces: Uint8Array[], last: Uint8Array, position: number): Uint8Array {
        this.position = position;
        if (pieces.length === 0) return last;
        pieces.push(last);
        let total = 0;
        for (const piece of pieces) total += piece.byteLength;
        const whole = new Uint8Array(total);
        let offset = 0;
        for (const piece of pieces) {
            whole.set(piece, offset);
            offset += piece.byteLength;
        }
        return whole;
    }
}
