// What only Node.js has: the `node:sqlite` driver and a token file. Import from "@syncapi/client/node".
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from "node:fs";
import { ClientSession, parseSession, TokenStore } from "./session.js";

export { FileMediaStore, uploadFile } from "./node-media.js";
export { NodeSqliteDriver } from "./storage/node-sqlite.js";

/**
 * The session in a file readable by its owner only (0600), in the Swift SDK's `FileTokenStore` format: the same file
 * (`<replica>.token` by convention) is read by `syncapi client` and by this client. Written to a temporary file
 * created 0600, synced, then renamed over the old one, so a crash never leaves half a token.
 */
export class FileTokenStore implements TokenStore {
    constructor(readonly path: string) {}

    async load(): Promise<ClientSession | undefined> {
        if (!existsSync(this.path)) return undefined;
        return parseSession(readFileSync(this.path, "utf8"));
    }

    async save(session: ClientSession): Promise<void> {
        const temporary = this.path + ".tmp";
        if (existsSync(temporary)) unlinkSync(temporary);
        const descriptor = openSync(temporary, "wx", 0o600);
        try {
            writeSync(descriptor, JSON.stringify(session));
            fsyncSync(descriptor);
        } finally {
            closeSync(descriptor);
        }
        renameSync(temporary, this.path);
    }

    async clear(): Promise<void> {
        if (existsSync(this.path)) unlinkSync(this.path);
    }
}
