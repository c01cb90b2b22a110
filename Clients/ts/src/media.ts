import { ClientCore } from "./core.js";
import { SyncClientError } from "./errors.js";
import { readCapped } from "./http.js";
import { JsonValue } from "./json.js";
import { sha256Hex } from "./verify.js";

/** One file of a `MediaStore`: its size and last use, which the cache's eviction (least recently used first) needs. */
export interface MediaFile {
    name: string;
    size: number;
    /** When it was last written or read (ms since 1970): the least recently used goes first. */
    usedAt: number;
}

/**
 * Where a replica's media bytes live (protocol §10): uploads waiting to leave and downloaded media, each named by the
 * SHA-256 of its bytes. It exists because bytes do not belong in the replica's SQL tables (the Swift SDK keeps them
 * in a folder beside the replica, `<replica>.media/`, as `FileMediaStore` does on Node) and each platform stores files
 * its own way (a folder, React Native's file system, IndexedDB). `MemoryMediaStore` keeps them for the process only.
 */
export interface MediaStore {
    read(name: string): Promise<Uint8Array | undefined>;
    /** Writes bytes under their name, atomically (a crash never leaves half a medium under its final name). */
    write(name: string, bytes: Uint8Array): Promise<void>;
    remove(name: string): Promise<void>;
    list(): Promise<MediaFile[]>;
}

/** Media in memory only (the default): queued uploads do not survive a restart; give a persistent store to apps. */
export class MemoryMediaStore implements MediaStore {
    private readonly files = new Map<string, { bytes: Uint8Array; usedAt: number }>();

    async read(name: string): Promise<Uint8Array | undefined> {
        const file = this.files.get(name);
        if (file) file.usedAt = Date.now();
        return file?.bytes;
    }

    async write(name: string, bytes: Uint8Array): Promise<void> {
        this.files.set(name, { bytes: bytes.slice(), usedAt: Date.now() });
    }

    async remove(name: string): Promise<void> {
        this.files.delete(name);
    }

    async list(): Promise<MediaFile[]> {
        return [...this.files].map(([name, file]) => ({ name, size: file.bytes.byteLength, usedAt: file.usedAt }));
    }
}

/** An upload the server refused for good (a type it does not take, too large, a reader's role), with its answer. */
export interface FailedUpload {
    url: string;
    contentType: string;
    status: number;
    code: string;
}

/** The prefix of this server's media URLs. */
const mediaPrefix = "/api/v1/media/";

/** The SHA-256 a media URL of this server names (`/api/v1/media/<sha256>`, absolute or not), undefined for another URL. */
export function mediaSha(url: string): string | undefined {
    let path = url;
    if (!url.startsWith("/")) {
        try {
            path = new URL(url).pathname;
        } catch {
            return undefined;
        }
    }
    const spaced = /^\/api\/v1\/spaces\/[^/]+\/media\//.exec(path);
    const rest = spaced ? path.slice(spaced[0].length) : path.startsWith(mediaPrefix) ? path.slice(mediaPrefix.length) : undefined;
    return rest !== undefined && /^[0-9a-f]{64}$/.test(rest) ? rest : undefined;
}

/** The URL the server gives these bytes (`/api/v1/media/<sha256>`): the same offline and online. */
export function mediaUrl(bytes: Uint8Array): string {
    return mediaPrefix + sha256Hex(bytes);
}

/**
 * The media of one client: an upload queue that survives restarts (the `uploads` table of the replica, the bytes in
 * the `MediaStore`), sent before the writes of each push so that an item never reaches the server before the medium it
 * names; and a download cache (media URLs are immutable: a cached file is never revalidated) bounded by `cacheBytes`,
 * least recently used first out, uploads waiting never evicted. It exists so that an app can attach a photo offline
 * and show it at once, and show others' photos without downloading them twice.
 */
export class MediaQueue {
    private readonly downloads = new Map<string, Promise<Uint8Array>>();

    constructor(
        private readonly core: ClientCore,
        readonly store: MediaStore,
        private readonly limits: { maxBytes: number; cacheBytes: number }
    ) {}

    /** Queues the upload of `bytes` and answers its URL at once, offline too (the SHA-256 of the bytes). */
    async upload(bytes: Uint8Array, contentType: string): Promise<string> {
        if (bytes.byteLength > this.limits.maxBytes) {
            throw SyncClientError.invalid(`the medium is ${bytes.byteLength} bytes; the most is ${this.limits.maxBytes} (mediaMaxBytes)`);
        }
        const sha = sha256Hex(bytes);
        await this.store.write(sha, bytes);
        await this.core.db.run("INSERT INTO uploads (sha256, contentType, size) VALUES (?, ?, ?) ON CONFLICT (sha256) DO NOTHING", [
            sha,
            contentType,
            bytes.byteLength,
        ]);
        this.core.schedulePush();
        return mediaPrefix + sha;
    }

    /** The uploads the server refused for good. */
    async failed(): Promise<FailedUpload[]> {
        const rows = await this.core.db.query("SELECT sha256, contentType, status, code FROM uploads WHERE status IS NOT NULL ORDER BY seq");
        return rows.map((row) => ({ url: mediaPrefix + String(row.sha256), contentType: String(row.contentType), status: Number(row.status), code: String(row.code) }));
    }

    /** The uploads still waiting to leave (their URLs). */
    async waiting(): Promise<string[]> {
        const rows = await this.core.db.query("SELECT sha256 FROM uploads WHERE status IS NULL ORDER BY seq");
        return rows.map((row) => mediaPrefix + String(row.sha256));
    }

    /**
     * Sends every upload waiting, first in first out (before the writes of a push). A transient failure stops the push
     * (the writes wait: they may name these media); a permanent one is kept in `failed()`. Answers how many left.
     */
    async push(): Promise<number> {
        const rows = await this.core.db.query("SELECT sha256, contentType FROM uploads WHERE status IS NULL ORDER BY seq");
        let sent = 0;
        for (const row of rows) {
            const sha = String(row.sha256);
            const bytes = await this.store.read(sha);
            if (!bytes) {
                await this.core.db.run("UPDATE uploads SET status = 0, code = 'missing_file' WHERE sha256 = ?", [sha]);
                continue;
            }
            const session = this.core.session();
            if (!session) throw SyncClientError.notSignedIn();
            const answer = await this.core.http.call("POST", "/media", { bytes, headers: { "Content-Type": String(row.contentType) }, token: session.token });
            if (answer.status === 201 || answer.status === 200) {
                await this.core.db.run("DELETE FROM uploads WHERE sha256 = ?", [sha]);
                sent += 1;
                continue;
            }
            if (answer.status === 401) {
                await this.core.sessionEnded();
                throw SyncClientError.notSignedIn();
            }
            const error = answer.error() ?? SyncClientError.from(answer.status, answer.json(), null);
            if (error.isTransient) throw error;
            await this.core.db.run("UPDATE uploads SET status = ?, code = ? WHERE sha256 = ?", [answer.status, error.code ?? `http_${answer.status}`, sha]);
            this.core.log.write("warning", "media", "upload refused: moved to failedUploads", { status: answer.status, code: error.code ?? "" });
        }
        if (sent > 0) this.core.log.write("info", "media", "media uploaded", { sent });
        return sent;
    }

    /**
     * The bytes of a medium: from the store when there (never revalidated: media URLs are immutable), else downloaded
     * (retried with backoff), then kept within `cacheBytes`; callers asking for one medium at once share one download.
     * A medium of this server is fetched with the session's token and checked against its SHA-256; one of another
     * server (`https://cdn.example.com/cat.jpg`, as an item may name) without the token, at most `maxBytes`, kept under
     * the SHA-256 of its URL.
     */
    async media(url: string): Promise<Uint8Array> {
        const sha = mediaSha(url);
        const external = sha === undefined || (/^[a-z]+:/i.test(url) && new URL(url).origin !== new URL(this.core.http.base).origin);
        if (external && !/^[a-z]+:\/\//i.test(url)) throw SyncClientError.invalid(`not a media URL: ${url}`);
        const key = external ? "external-" + sha256Hex(new TextEncoder().encode(url)) : sha!;
        const cached = await this.store.read(key);
        if (cached) return cached;
        let download = this.downloads.get(key);
        if (!download) {
            download = this.core.retry.run(() => (external ? this.fetchExternal(url, key) : this.fetch(key))).finally(() => this.downloads.delete(key));
            this.downloads.set(key, download);
        }
        return download;
    }

    private async fetchExternal(url: string, key: string): Promise<Uint8Array> {
        const answer = await this.core.http.getExternal(url, this.limits.maxBytes);
        if (answer.status !== 200) throw SyncClientError.from(answer.status, undefined, answer.header("Retry-After"));
        await this.store.write(key, answer.bytes);
        await this.evict(key);
        return answer.bytes;
    }

    /**
     * Downloads a medium of this server, resuming a download cut before: what arrived is kept as `<sha256>.part` and the
     * next attempt asks for the rest with `Range` (206 appends, 200 starts again, 416 means the part is whole). The
     * whole is checked against its SHA-256 before it is kept under its name.
     */
    private async fetch(sha: string): Promise<Uint8Array> {
        const session = this.core.session();
        if (!session) throw SyncClientError.notSignedIn();
        const part = `${sha}.part`;
        const have = (await this.store.read(part)) ?? new Uint8Array(0);
        const controller = new AbortController();
        const headers: Record<string, string> = have.byteLength > 0 ? { Range: `bytes=${have.byteLength}-` } : {};
        const response = await this.core.http.stream(`/media/${sha}`, { token: session.token, headers, signal: controller.signal });
        let bytes: Uint8Array;
        if (response.status === 416) {
            await response.body?.cancel().catch(() => undefined);
            bytes = have;
        } else if ((response.status === 200 || response.status === 206) && response.body) {
            bytes = await this.receive(response.body, response.status === 206 ? have : new Uint8Array(0), part, controller);
        } else {
            const body = await readCapped(response, 64 * 1024).catch(() => new Uint8Array(0));
            if (response.status === 401) {
                await this.core.sessionEnded();
                throw SyncClientError.notSignedIn();
            }
            let json: JsonValue | undefined;
            try {
                json = JSON.parse(new TextDecoder().decode(body)) as JsonValue;
            } catch {
                json = undefined;
            }
            throw SyncClientError.from(response.status, json, response.headers.get("Retry-After"));
        }
        await this.store.remove(part);
        if (sha256Hex(bytes) !== sha) {
            throw new SyncClientError("server", `the downloaded bytes are not ${sha}`, { status: 200, code: "media_corrupt", detail: "digest mismatch" });
        }
        await this.store.write(sha, bytes);
        await this.evict(sha);
        return bytes;
    }

    /** Reads a download's body after `start`, at most `maxBytes` in all; a cut keeps what arrived in `part` (`offline`). */
    private async receive(body: ReadableStream<Uint8Array>, start: Uint8Array, part: string, controller: AbortController): Promise<Uint8Array> {
        const pieces: Uint8Array[] = start.byteLength > 0 ? [start] : [];
        let total = start.byteLength;
        const join = (): Uint8Array => {
            const whole = new Uint8Array(total);
            let offset = 0;
            for (const piece of pieces) {
                whole.set(piece, offset);
                offset += piece.byteLength;
            }
            return whole;
        };
        const reader = body.getReader();
        // A download that stalls (no byte for a minute) is cut like one the network dropped.
        let watchdog = setTimeout(() => controller.abort(), 60_000);
        try {
            for (;;) {
                let piece: ReadableStreamReadResult<Uint8Array>;
                try {
                    piece = await reader.read();
                } catch (error) {
                    if (total > 0) await this.store.write(part, join());
                    throw SyncClientError.offline(`the download was cut after ${total} bytes`, error);
                }
                if (piece.done) return join();
                total += piece.value.byteLength;
                if (total > this.limits.maxBytes) {
                    await reader.cancel().catch(() => undefined);
                    await this.store.remove(part);
                    throw SyncClientError.invalid(`the medium is larger than ${this.limits.maxBytes} bytes (mediaMaxBytes): not kept`);
                }
                pieces.push(piece.value);
                clearTimeout(watchdog);
                watchdog = setTimeout(() => controller.abort(), 60_000);
            }
        } finally {
            clearTimeout(watchdog);
        }
    }

    /** Removes the least recently used files until the store holds at most `cacheBytes`, keeping uploads waiting and `keep`. */
    async evict(keep?: string): Promise<void> {
        const pinned = new Set((await this.core.db.query("SELECT sha256 FROM uploads")).map((row) => String(row.sha256)));
        if (keep !== undefined) pinned.add(keep);
        const files = await this.store.list();
        let total = files.reduce((sum, file) => sum + file.size, 0);
        for (const file of files.sort((a, b) => a.usedAt - b.usedAt)) {
            if (total <= this.limits.cacheBytes) break;
            if (pinned.has(file.name)) continue;
            await this.store.remove(file.name);
            total -= file.size;
        }
    }

    /** Forgets every upload and media file (sign-out, another account, a removed space): another account must not see them. */
    async erase(): Promise<void> {
        await this.core.db.run("DELETE FROM uploads");
        for (const file of await this.store.list()) await this.store.remove(file.name);
    }
}
