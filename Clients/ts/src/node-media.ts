import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { SyncClient } from "./client.js";
import { SyncClientError } from "./errors.js";
import { MediaFile, MediaStore } from "./media.js";

/**
 * Media in a folder beside the replica (`<replica>.media/`, 0700, files 0600), as the Swift SDK keeps them: each file
 * named by the SHA-256 of its bytes, its modification time its last use. It exists so that queued uploads survive a
 * restart on Node, and so that `syncapi client` and this client share a replica's media.
 */
export class FileMediaStore implements MediaStore {
    constructor(readonly folder: string) {
        mkdirSync(folder, { recursive: true, mode: 0o700 });
    }

    /** The store beside a replica file. */
    static beside(replicaPath: string): FileMediaStore {
        return new FileMediaStore(replicaPath + ".media");
    }

    private path(name: string): string {
        if (!/^[A-Za-z0-9._-]+$/.test(name) || name.startsWith(".")) throw new Error(`not a media name: ${name}`);
        return join(this.folder, name);
    }

    async read(name: string): Promise<Uint8Array | undefined> {
        const path = this.path(name);
        if (!existsSync(path)) return undefined;
        const now = new Date();
        utimesSync(path, now, now);
        return new Uint8Array(readFileSync(path));
    }

    async write(name: string, bytes: Uint8Array): Promise<void> {
        const path = this.path(name);
        const temporary = path + ".part.new";
        writeFileSync(temporary, bytes, { mode: 0o600 });
        renameSync(temporary, path);
    }

    async remove(name: string): Promise<void> {
        const path = this.path(name);
        if (existsSync(path)) unlinkSync(path);
    }

    async list(): Promise<MediaFile[]> {
        if (!existsSync(this.folder)) return [];
        return readdirSync(this.folder)
            .filter((name) => !name.endsWith(".new"))
            .map((name) => {
                const stat = statSync(join(this.folder, name), { throwIfNoEntry: false });
                return { name, size: stat?.size ?? 0, usedAt: stat?.mtimeMs ?? 0 };
            });
    }
}

/**
 * Queues the upload of a file (`client.upload` of its bytes, copied into the client's media store), sized before it is
 * read so that a file over `maxBytes` is never loaded into memory; answers its URL at once.
 */
export async function uploadFile(client: SyncClient, path: string, contentType: string, maxBytes = 20 * 1024 * 1024): Promise<string> {
    const size = statSync(path, { throwIfNoEntry: false })?.size;
    if (size === undefined) throw SyncClientError.invalid(`no file at ${path}`);
    if (size > maxBytes) throw SyncClientError.invalid(`the medium is ${size} bytes; the most is ${maxBytes} (mediaMaxBytes)`);
    return client.upload(readFileSync(path), contentType);
}
