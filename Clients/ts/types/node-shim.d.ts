// The few Node.js APIs this package and its tests use, declared here because this repository installs no npm
// package (no @types/node). Only what is used, with the signatures of Node 22. Not shipped: the package's public
// declarations name none of these types, so an app compiles against them with or without @types/node.

declare module "node:sqlite" {
    type SQLValue = null | number | bigint | string | Uint8Array;
    export class StatementSync {
        all(...params: SQLValue[]): Record<string, SQLValue>[];
        get(...params: SQLValue[]): Record<string, SQLValue> | undefined;
        run(...params: SQLValue[]): { changes: number | bigint; lastInsertRowid: number | bigint };
    }
    export class DatabaseSync {
        constructor(path: string, options?: { open?: boolean });
        exec(sql: string): void;
        prepare(sql: string): StatementSync;
        close(): void;
    }
}

declare module "node:fs" {
    export function readFileSync(path: string, encoding: "utf8"): string;
    export function writeFileSync(path: string, data: string, options?: { mode?: number; flag?: string }): void;
    export function existsSync(path: string): boolean;
    export function unlinkSync(path: string): void;
    export function renameSync(from: string, to: string): void;
    export function chmodSync(path: string, mode: number): void;
    export function statSync(path: string): { mode: number; size: number };
    export function openSync(path: string, flags: string, mode?: number): number;
    export function writeSync(fd: number, data: string): number;
    export function fsyncSync(fd: number): void;
    export function closeSync(fd: number): void;
    export function mkdtempSync(prefix: string): string;
    export function rmSync(path: string, options?: { recursive?: boolean; force?: boolean }): void;
    export function copyFileSync(from: string, to: string): void;
    export function readdirSync(path: string): string[];
}

declare module "node:path" {
    export function join(...parts: string[]): string;
    export function dirname(path: string): string;
    export function resolve(...parts: string[]): string;
}

declare module "node:os" {
    export function tmpdir(): string;
}

declare module "node:url" {
    export function fileURLToPath(url: string | URL): string;
}

declare module "node:net" {
    export interface AddressInfo {
        port: number;
    }
    export interface Server {
        listen(port: number, host: string, callback: () => void): Server;
        address(): AddressInfo | string | null;
        close(callback?: () => void): void;
    }
    export interface Socket {
        once(event: "data", listener: (chunk: unknown) => void): Socket;
        destroy(): void;
    }
    export function createServer(connectionListener?: (socket: Socket) => void): Server;
}

declare module "node:child_process" {
    export interface Readable {
        on(event: "data", listener: (chunk: { toString(): string }) => void): void;
    }
    export interface ChildProcess {
        pid?: number;
        exitCode: number | null;
        signalCode: string | null;
        stdout: Readable | null;
        stderr: Readable | null;
        kill(signal?: string): boolean;
        once(event: "exit", listener: (code: number | null, signal: string | null) => void): void;
        once(event: "error", listener: (error: Error) => void): void;
    }
    export function spawn(
        command: string, args: string[], options?: { stdio?: ("ignore" | "pipe")[]; env?: Record<string, string | undefined> }
    ): ChildProcess;
    export function execFile(
        command: string, args: string[], options: { env?: Record<string, string | undefined>; input?: string },
        callback: (error: Error | null, stdout: string, stderr: string) => void
    ): { stdin: { end(data?: string): void } | null };
}

declare module "node:crypto" {
    export interface KeyObject {
        export(options: { format: "jwk" }): Record<string, string>;
    }
    export function generateKeyPairSync(
        type: "rsa", options: { modulusLength: number }
    ): { publicKey: KeyObject; privateKey: KeyObject };
    export function sign(algorithm: string, data: Uint8Array, key: KeyObject): Uint8Array;
    export function createHash(algorithm: "sha256"): { update(data: string | Uint8Array): { digest(encoding: "hex"): string } };
    export function randomUUID(): string;
}

declare module "node:test" {
    type Body = (context: unknown) => void | Promise<void>;
    export function test(name: string, body: Body): Promise<void>;
    export function test(name: string, options: { timeout?: number }, body: Body): Promise<void>;
    export function describe(name: string, body: () => void | Promise<void>): Promise<void>;
    export function it(name: string, body: Body): Promise<void>;
    export function before(body: () => void | Promise<void>, options?: { timeout?: number }): void;
    export function after(body: () => void | Promise<void>, options?: { timeout?: number }): void;
}

declare module "node:assert/strict" {
    interface Assert {
        (value: unknown, message?: string): asserts value;
        ok(value: unknown, message?: string): asserts value;
        equal<T>(actual: unknown, expected: T, message?: string): asserts actual is T;
        notEqual(actual: unknown, expected: unknown, message?: string): void;
        deepEqual<T>(actual: unknown, expected: T, message?: string): asserts actual is T;
        notDeepEqual(actual: unknown, expected: unknown, message?: string): void;
        match(value: string, pattern: RegExp, message?: string): void;
        rejects(block: Promise<unknown> | (() => Promise<unknown>), check?: ((error: unknown) => boolean) | object, message?: string): Promise<void>;
        throws(block: () => unknown, check?: ((error: unknown) => boolean) | object, message?: string): void;
        fail(message?: string): never;
    }
    const assert: Assert;
    export default assert;
}

declare var process: {
    env: Record<string, string | undefined>;
    pid: number;
    platform: string;
};

interface NodeBuffer extends Uint8Array {
    toString(encoding?: "utf8" | "base64url" | "hex"): string;
}
declare const Buffer: {
    from(data: string | Uint8Array, encoding?: "utf8" | "base64url"): NodeBuffer;
};
