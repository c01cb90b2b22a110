/** How much a log entry matters. */
export type LogLevel = "debug" | "info" | "notice" | "warning" | "error";

/**
 * One log entry. `subsystem` is the Swift SDK's label (`syncapi.client.sync`, `.push`, `.session`, `.http`);
 * `metadata` holds ids, counts, codes and durations, never a token, a password or an item's content.
 */
export interface LogEntry {
    level: LogLevel;
    subsystem: string;
    message: string;
    metadata: Record<string, string | number | boolean>;
}

/** The logger hook: called for every entry, synchronously; an exception it throws is ignored. */
export type Logger = (entry: LogEntry) => void;

/** A logger that writes entries at `minimum` or above to the console, as one line each. */
export function consoleLogger(minimum: LogLevel = "info"): Logger {
    const order: LogLevel[] = ["debug", "info", "notice", "warning", "error"];
    return (entry) => {
        if (order.indexOf(entry.level) < order.indexOf(minimum)) return;
        const meta = Object.entries(entry.metadata)
            .map(([key, value]) => `${key}=${value}`)
            .join(" ");
        console.log(`${entry.level} ${entry.subsystem}: ${entry.message}${meta ? " " + meta : ""}`);
    };
}

/** Calls the hook, if any, shielded from its failures. */
export class Log {
    constructor(private readonly hook: Logger | undefined) {}

    write(level: LogLevel, subsystem: string, message: string, metadata: LogEntry["metadata"] = {}): void {
        if (!this.hook) return;
        try {
            this.hook({ level, subsystem: `syncapi.client.${subsystem}`, message, metadata });
        } catch {
            // A logger never breaks the client.
        }
    }
}
