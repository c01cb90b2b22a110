import { isObject, JsonValue } from "./json.js";

/**
 * The stable `code`s of the server's error answers (protocol §7), and the client's own for errors that carry none.
 * An open set: a code a newer server sends that is not listed here is kept as it came. Match on codes, never on a
 * title or a detail.
 */
export const ErrorCode = {
    invalidParameter: "invalid_parameter",
    invalidDate: "invalid_date",
    invalidField: "invalid_field",
    unknownField: "unknown_field",
    invalidId: "invalid_id",
    invalidJson: "invalid_json",
    notFound: "not_found",
    unauthorized: "unauthorized",
    invalidCredentials: "invalid_credentials",
    usernameTaken: "username_taken",
    signupDisabled: "signup_disabled",
    preconditionFailed: "precondition_failed",
    typeImmutable: "type_immutable",
    payloadTooLarge: "payload_too_large",
    methodNotAllowed: "method_not_allowed",
    invalidGroup: "invalid_group",
    invalidSubrequest: "invalid_subrequest",
    tooManyRequests: "too_many_requests",
    unavailable: "unavailable",
    unsupportedMediaType: "unsupported_media_type",
    forbidden: "forbidden",
    quotaExceeded: "quota_exceeded",
    lastOwner: "last_owner",
    requestTimeout: "request_timeout",
    internal: "internal",
    // The client's own (as the Swift SDK names them).
    /** An answer the client did not expect (a status the call never answers). */
    unexpectedAnswer: "unexpected_answer",
    /** An answer whose body does not say what the protocol says it must. */
    invalidAnswer: "invalid_answer",
    /** An answer larger than the client reads (`answerMaxBytes`): not read further. */
    answerTooLarge: "answer_too_large",
} as const;

/** A code of `ErrorCode`, or any other string a server sends. */
export type ErrorCodeValue = (typeof ErrorCode)[keyof typeof ErrorCode] | (string & {});

/**
 * What went wrong, sorted by what the app can do about it (the cases of the Swift SDK's `SyncClientError`):
 *
 * - `offline`: no answer (network down, refused, timed out); writes stay queued.
 * - `unavailable`: 5xx (the server busy or restarting), with `retryAfter` when it said.
 * - `throttled`: 429, with `retryAfter`; sign-in never retries it by itself.
 * - `server`: the server refused the call for good, with its `status`, stable `code`, `detail` and `field`.
 * - `notSignedIn`: no session, or the token stopped working (logout elsewhere, expiry).
 * - `invalidCredentials`: a wrong username or password (not a lost session).
 * - `idTokenRefused`: `POST /token` refused the ID token; `check` names the failed check (`expired`, `audience`…).
 * - `unpushedWrites`: a logout or an account switch would lose queued writes (`pending` lists them).
 * - `invalid`: a call the client refuses before any request (a missing parent, a read-only collection).
 * - `spaceRemoved`: the account is no longer a member of the space this replica held: the replica was erased.
 * - `local`: the storage failed.
 */
export type SyncErrorKind =
    | "offline"
    | "unavailable"
    | "throttled"
    | "server"
    | "notSignedIn"
    | "invalidCredentials"
    | "idTokenRefused"
    | "unpushedWrites"
    | "invalid"
    | "spaceRemoved"
    | "local";

/** The checks `POST /token` names when it refuses an ID token (protocol §14). */
export const idTokenChecks = [
    "malformed",
    "issuer",
    "algorithm",
    "unknown key",
    "signature",
    "audience",
    "expired",
    "not yet valid",
    "subject",
] as const;

export interface SyncErrorInit {
    status?: number;
    code?: string;
    detail?: string;
    field?: string;
    retryAfter?: number;
    check?: string;
    pending?: readonly unknown[];
    cause?: unknown;
}

/** Every error the client throws. `kind` says what happened; a server's refusal carries its stable `code`. */
export class SyncClientError extends Error {
    readonly kind: SyncErrorKind;
    /** The HTTP status of the answer, when there was one. */
    readonly status: number | undefined;
    /** The server's stable code (protocol §7), or the client's own (`answer_too_large`, `http_<status>`…). */
    readonly code: string | undefined;
    readonly detail: string;
    /** The field a 400 `invalid_field` names. */
    readonly field: string | undefined;
    /** Seconds the server asked to wait (`Retry-After`). */
    readonly retryAfter: number | undefined;
    /** For `idTokenRefused`: the failed check (one of `idTokenChecks`), when the detail names one. */
    readonly check: string | undefined;
    /** For `unpushedWrites`: the writes that would be lost. */
    readonly pending: readonly unknown[];

    constructor(kind: SyncErrorKind, message: string, init: SyncErrorInit = {}) {
        super(message);
        this.name = "SyncClientError";
        this.kind = kind;
        this.status = init.status;
        this.code = init.code;
        this.detail = init.detail ?? "";
        this.field = init.field;
        this.retryAfter = init.retryAfter;
        this.check = init.check;
        this.pending = init.pending ?? [];
        if (init.cause !== undefined) (this as { cause?: unknown }).cause = init.cause;
    }

    /** Worth retrying later (network, 429, 5xx), as opposed to a permanent refusal. */
    get isTransient(): boolean {
        return this.kind === "offline" || this.kind === "unavailable" || this.kind === "throttled";
    }

    /** The server refused a group for its size: 413, or 400 `invalid_group`. */
    get refusesGroupSize(): boolean {
        return this.kind === "server" && (this.status === 413 || (this.status === 400 && this.code === ErrorCode.invalidGroup));
    }

    static offline(why: string, cause?: unknown): SyncClientError {
        return new SyncClientError("offline", `offline: ${why}`, { cause });
    }

    static notSignedIn(): SyncClientError {
        return new SyncClientError("notSignedIn", "not signed in", { status: 401, code: ErrorCode.unauthorized });
    }

    static invalid(why: string): SyncClientError {
        return new SyncClientError("invalid", why);
    }

    static invalidAnswer(detail: string, status = 200): SyncClientError {
        return new SyncClientError("server", `${status} ${ErrorCode.invalidAnswer}: ${detail}`, {
            status,
            code: ErrorCode.invalidAnswer,
            detail,
        });
    }

    static answerTooLarge(status: number, limit: number): SyncClientError {
        const detail = `the answer is larger than ${limit} bytes`;
        return new SyncClientError("server", `${status} ${ErrorCode.answerTooLarge}: ${detail}`, {
            status,
            code: ErrorCode.answerTooLarge,
            detail,
        });
    }

    /**
     * The error an answer means (nil for a success): 401 is a lost session, or wrong credentials by its code; 429
     * throttling and 5xx a busy server, both transient; anything else a refusal with the problem's code (protocol §7),
     * `http_<status>` when the body carries none (a proxy's answer).
     */
    static fromAnswer(status: number, body: JsonValue | undefined, retryAfter: string | null | undefined): SyncClientError | undefined {
        if (status < 300) return undefined;
        const problem = isObject(body) ? body : {};
        const code = typeof problem.code === "string" ? problem.code : `http_${status}`;
        const detail = typeof problem.detail === "string" ? problem.detail : "";
        const field = typeof problem.field === "string" ? problem.field : undefined;
        const seconds = parseRetryAfter(retryAfter);
        if (status === 401) {
            if (code === ErrorCode.invalidCredentials) {
                return new SyncClientError("invalidCredentials", "wrong username or password", { status, code, detail });
            }
            return new SyncClientError("notSignedIn", "not signed in", { status, code, detail });
        }
        if (status === 429) {
            const wait = seconds === undefined ? "" : `, retry after ${seconds} s`;
            return new SyncClientError("throttled", `429 ${code}: too many attempts${wait}`, { status, code, detail, retryAfter: seconds });
        }
        if (status >= 500) {
            const wait = seconds === undefined ? "" : `, retry after ${seconds} s`;
            return new SyncClientError("unavailable", `${status} ${code}: the server is busy${wait}`, {
                status,
                code,
                detail,
                retryAfter: seconds,
            });
        }
        if (status === 304) return undefined;
        return new SyncClientError("server", `${status} ${code}: ${detail}`, { status, code, detail, field });
    }

    /** `fromAnswer`, or `unexpected_answer` for a status the call never answers. */
    static from(status: number, body: JsonValue | undefined, retryAfter: string | null | undefined): SyncClientError {
        return (
            SyncClientError.fromAnswer(status, body, retryAfter) ??
            new SyncClientError("server", `${status} ${ErrorCode.unexpectedAnswer}`, {
                status,
                code: ErrorCode.unexpectedAnswer,
                detail: `unexpected answer ${status}`,
            })
        );
    }

    /** Any error as the client reports it: a `SyncClientError` as it is, anything else `local`. */
    static wrapping(error: unknown): SyncClientError {
        if (error instanceof SyncClientError) return error;
        return new SyncClientError("local", `on this device: ${String(error)}`, { cause: error });
    }
}

/**
 * `Retry-After` in seconds: a number of seconds, or an HTTP date (RFC 9110 §10.2.3) turned into the seconds until it;
 * undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | undefined {
    if (value === null || value === undefined) return undefined;
    const text = value.trim();
    if (/^\d+$/.test(text)) return Number(text);
    const at = Date.parse(text);
    if (Number.isNaN(at)) return undefined;
    return Math.max(0, Math.ceil((at - now) / 1000));
}
