// The README's getting-started, block for block: each `#region` below is a code block of README.md, verbatim
// (test/readme.test.ts checks it, and runs these functions against a real server). It imports the package by its
// name, as an app does (Node resolves a package's own name from inside it).

// #region open
import { consoleLogger, SyncClient } from "@syncapi/client";
import { FileTokenStore, NodeSqliteDriver } from "@syncapi/client/node";

/** The app's client: the replica and the session in two files side by side (0600). */
export async function openAppClient(serverUrl: string, replicaPath: string): Promise<{ client: SyncClient; storage: NodeSqliteDriver }> {
    const storage = NodeSqliteDriver.open(replicaPath);
    const client = await SyncClient.open({
        serverUrl,
        storage,
        tokenStore: new FileTokenStore(replicaPath + ".token"),
        logger: consoleLogger("warning"), // or your own: (entry) => myLog(entry.level, entry.message, entry.metadata)
    });
    return { client, storage };
}
// #endregion open

// #region first-sync
/** Signs up once, writes, syncs, reads: all reads are local, all writes apply at once and leave by themselves. */
export async function firstSync(client: SyncClient, username: string): Promise<string[]> {
    if (!client.isSignedIn) await client.signUp({ family: "Smith", username, password: "correct horse" });
    await client.save("contacts", { id: "ann", firstName: "Ann", emails: ["ann@example.com"] });
    await client.save("events", { id: "dinner", title: "Dinner", start: "2026-05-01T19:00:00Z" });
    const report = await client.sync(); // pushes the two writes, then one POST /group for every collection
    console.log(`synced to ${report.date}: ${report.pushed} writes pushed`);
    const family = await client.singleton("family");
    const contacts = await client.items("contacts"); // the server's JSON, unsent edits on top
    return [String(family?.name), ...contacts.map((contact) => String(contact.firstName))];
}
// #endregion first-sync

// #region paging
/** A paginated list holds the top of the server's list; `loadMore` pages down from its last item, with no hole. */
export async function allThreads(client: SyncClient): Promise<string[]> {
    while (!(await client.hasAll("threads"))) await client.loadMore("threads");
    return (await client.items("threads")).map((thread) => String(thread.title));
}
// #endregion paging

// #region errors
import { ErrorCode, SyncClientError } from "@syncapi/client";

/** What a sign-up screen says: match the error's kind and the server's stable code, never its text. */
export function message(error: unknown): string {
    if (!(error instanceof SyncClientError)) return String(error);
    switch (error.kind) {
        case "invalidCredentials":
            return "Wrong username or password.";
        case "throttled":
            return `Too many attempts: try again in ${error.retryAfter ?? 60} s.`;
        case "offline":
            return "No network: your changes are kept and will be sent.";
        case "server":
            return error.code === ErrorCode.usernameTaken ? "That username is taken." : `Refused (${error.code}).`;
        default:
            return error.message;
    }
}
// #endregion errors

// #region refused
/** Writes the server refused for good are never retried: the app shows them, then forgets them. */
export async function refusedWrites(client: SyncClient): Promise<string[]> {
    const lines = (await client.failedOperations()).map((op) => `${op.kind} ${op.collection}/${op.id}: ${op.status} ${op.code}`);
    await client.clearFailedOperations();
    return lines;
}

/** Conflicts are merged field by field; a field both sides changed keeps the server's value unless a handler decides. */
export function keepBothNotes(client: SyncClient): void {
    client.setConflictHandler("contacts", ({ local, server }) =>
        server && local ? { merged: { ...server, notes: `${server.notes ?? ""}\n${local.notes ?? ""}` } } : "keepServer"
    );
}
// #endregion refused

// #region live
import { documentVisibility, StorageDriver, SyncStatus } from "@syncapi/client";

/** Live while the app is open: other devices' writes arrive by themselves, and the screen redraws only when its items change. */
export function followContacts(client: SyncClient, show: (names: string[]) => void, badge: (status: SyncStatus) => void): () => void {
    client.startLive(); // GET /changes (a streamed fetch), a sync on each notice, reconnects with backoff and Last-Event-ID
    const stopItems = client.observeItems("contacts", (contacts) => show(contacts.map((contact) => String(contact.firstName))));
    const stopStatus = client.onStatus(badge); // state, pendingWrites, failedWrites, live, liveConnected, lastError
    return () => {
        stopItems();
        stopStatus();
        void client.stopLive();
    };
}

/** In a browser, writes leave and live mode reopens when the page is shown again (React Native: `reactNativeAppState(AppState)`). */
export async function openInBrowser(serverUrl: string, storage: StorageDriver): Promise<SyncClient> {
    return SyncClient.open({ serverUrl, storage, appState: documentVisibility(document) });
}
// #endregion live

// #region spaces-media
import { FileMediaStore } from "@syncapi/client/node";

/** One replica per space: joining a space opens its own client, which shares the session and keeps its own files. */
export async function joinSpace(client: SyncClient, code: string, replicaPath: string): Promise<SyncClient> {
    const space = await client.acceptInvitation(code); // an owner made the code: (await client.invite({ role: "member" })).code
    return client.forSpace(space.id, { storage: NodeSqliteDriver.open(replicaPath), mediaStore: FileMediaStore.beside(replicaPath) });
}

/** A photo attached offline: its URL is known at once; the bytes leave before the post that names it, even after a restart. */
export async function postPhoto(client: SyncClient, id: string, jpeg: Uint8Array): Promise<Uint8Array> {
    const mediaUrl = await client.upload(jpeg, "image/jpeg");
    await client.save("wall", { id, type: "photo", mediaUrl });
    return client.media(mediaUrl); // the bytes, from the cache (downloaded once, checked against their SHA-256)
}
// #endregion spaces-media
