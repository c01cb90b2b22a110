/**
 * A signed-in session: the bearer token and who it belongs to. Its JSON is the Swift SDK's `ClientSession`
 * (`{"token", "accountID", "familyID", "expiresAt"}`), so a token file is read by both SDKs' tools.
 */
export interface ClientSession {
    token: string;
    accountID: string;
    /** The home space's id (protocol §15; the family of the default model); "" for an account in no space yet. */
    familyID: string;
    /** When the token stops working (RFC 3339), as the server said. */
    expiresAt?: string;
}

/** Where the session is kept between launches. Asynchronous, so that secure stores (a keychain, an encrypted store) fit it. */
export interface TokenStore {
    load(): Promise<ClientSession | undefined>;
    save(session: ClientSession): Promise<void>;
    clear(): Promise<void>;
}

/** The session in memory only: it lasts as long as the process (the default; apps give a persistent store). */
export class MemoryTokenStore implements TokenStore {
    private session: ClientSession | undefined;

    async load(): Promise<ClientSession | undefined> {
        return this.session ? { ...this.session } : undefined;
    }

    async save(session: ClientSession): Promise<void> {
        this.session = { ...session };
    }

    async clear(): Promise<void> {
        this.session = undefined;
    }
}

/** Reads a stored session's JSON (nil when it is not one). */
export function parseSession(text: string): ClientSession | undefined {
    try {
        const value = JSON.parse(text) as Partial<ClientSession>;
        if (typeof value.token !== "string" || typeof value.accountID !== "string" || typeof value.familyID !== "string") return undefined;
        const session: ClientSession = { token: value.token, accountID: value.accountID, familyID: value.familyID };
        if (typeof value.expiresAt === "string") session.expiresAt = value.expiresAt;
        return session;
    } catch {
        return undefined;
    }
}
