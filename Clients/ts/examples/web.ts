// The README's web section, block for block: each `#region` below is a code block of README.md, verbatim
// (test/readme.test.ts checks the text; test/examples.test.ts runs the sign-in and the list under Node against a real
// server, with stand-ins for the page's `document` and Google's script).

// #region web-open
import { ClientSession, documentVisibility, IndexedDbDriver, SyncClient, TokenStore } from "@syncapi/client";

/** The session in the page's localStorage (the replica is in the origin's IndexedDB: the same trust). */
export const localTokenStore: TokenStore = {
    async load() {
        const text = localStorage.getItem("syncapi.session");
        return text ? (JSON.parse(text) as ClientSession) : undefined;
    },
    async save(session) {
        localStorage.setItem("syncapi.session", JSON.stringify(session));
    },
    async clear() {
        localStorage.removeItem("syncapi.session");
    },
};

/** The page's client: the replica in IndexedDB (kept across reloads, offline too), live while the page is visible. */
export async function openPageClient(): Promise<SyncClient> {
    const client = await SyncClient.open({
        serverUrl: location.origin, // the server has no CORS: serve the page from the API's origin (a reverse proxy)
        storage: await IndexedDbDriver.open("replica"), // refused while another tab holds it (Web Locks)
        tokenStore: localTokenStore,
        appState: documentVisibility(document),
    });
    client.startLive(); // signed out, it starts at sign-in
    return client;
}
// #endregion web-open

// #region web-sign-in
/** Google's button (`<script src="https://accounts.google.com/gsi/client">`): its credential is an ID token. */
export function signInWithGoogle(client: SyncClient, clientId: string, button: HTMLElement): Promise<void> {
    return new Promise((resolve, reject) => {
        google.accounts.id.initialize({
            client_id: clientId,
            callback: ({ credential }) => {
                // `space`: a new account's home space (without it, the account is in no space until it joins one)
                client.signIn({ idToken: credential, space: "Home" }).then(() => client.sync()).then(() => resolve(), reject);
            },
        });
        google.accounts.id.renderButton(button, { type: "standard", theme: "outline" });
    });
}
// #endregion web-sign-in

// #region web-list
import { typed } from "@syncapi/client";
import type { FamilyCollections } from "./model.js";

/** The coming events in a <ul>, drawn again when a sync or a write changes them; answers the function that stops it. */
export function showEvents(client: SyncClient, list: HTMLUListElement, from: string): () => void {
    return typed<FamilyCollections>(client)
        .query("events")
        .where("start", ">=", from)
        .orderBy("start")
        .limit(50)
        .observe((events) => {
            list.replaceChildren(
                ...events.map((event) => {
                    const item = document.createElement("li");
                    item.textContent = `${event.start.slice(0, 10)} ${event.title}`;
                    return item;
                })
            );
        });
}
// #endregion web-list
