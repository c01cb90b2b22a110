// More of Node.js's APIs, for the media store of "@syncapi/client/node" and the command line (src/cli.ts): merged with
// node-shim.d.ts's declarations of the same modules (kept apart so that the two files change independently).

declare module "node:fs" {
    export function realpathSync(path: string): string;
    export function mkdirSync(path: string, options?: { recursive?: boolean; mode?: number }): void;
    export function utimesSync(path: string, accessed: Date, modified: Date): void;
    export function readFileSync(path: string): Uint8Array;
    export function writeFileSync(path: string, data: Uint8Array, options?: { mode?: number }): void;
    export function statSync(path: string, options: { throwIfNoEntry: false }): { size: number; mtimeMs: number } | undefined;
}
