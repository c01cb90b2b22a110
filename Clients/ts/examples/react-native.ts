// The README's React Native section, block for block: each `#region` below is a code block of README.md, verbatim
// (test/readme.test.ts checks the text). It compiles against the libraries' documented signatures, declared in
// types/react-native-libraries.d.ts (this repository installs no npm package), and test/examples.test.ts runs it
// under Node against a real server, with stand-ins for those modules (op-sqlite's API over a real SQLite file, the
// Keychain, AppState, the sign-in libraries, React's hooks).

// #region rn-open
import { open } from "@op-engineering/op-sqlite";
import { AppState } from "react-native";
import * as Keychain from "react-native-keychain";
import { ClientSession, FetchFunction, OpSqliteDriver, reactNativeAppState, SyncClient, TokenStore } from "@syncapi/client";

/** The session in the Keychain (Android: the Keystore), so that the app stays signed in from one launch to the next. */
export const keychainTokenStore: TokenStore = {
    async load() {
        const saved = await Keychain.getGenericPassword({ service: "syncapi.session" });
        return saved ? (JSON.parse(saved.password) as ClientSession) : undefined;
    },
    async save(session) {
        await Keychain.setGenericPassword(session.accountID, JSON.stringify(session), { service: "syncapi.session" });
    },
    async clear() {
        await Keychain.resetGenericPassword({ service: "syncapi.session" });
    },
};

/**
 * The app's one client, opened at launch: the replica in op-sqlite, the session in the Keychain, live mode while the
 * app is in the foreground (closed in the background; back in the foreground, writes that waited leave and it reopens).
 * Live mode reads `GET /changes` as it arrives: give a `fetch` whose bodies stream (React Native's built-in one does not).
 */
export async function openClient(serverUrl: string, streamingFetch: FetchFunction): Promise<SyncClient> {
    const client = await SyncClient.open({
        serverUrl,
        storage: new OpSqliteDriver(open({ name: "replica.sqlite" })),
        tokenStore: keychainTokenStore,
        appState: reactNativeAppState(AppState),
        fetch: streamingFetch,
    });
    client.startLive(); // signed out, it starts at sign-in
    return client;
}
// #endregion rn-open

// #region rn-sign-in
import { appleAuth } from "@invertase/react-native-apple-authentication";
import { GoogleSignin } from "@react-native-google-signin/google-signin";

/** Sign in with Apple: its identity token signs in to the server (the first time, it makes the account). False if none. */
export async function signInWithApple(client: SyncClient): Promise<boolean> {
    const { identityToken } = await appleAuth.performRequest({
        requestedOperation: appleAuth.Operation.LOGIN,
        requestedScopes: [appleAuth.Scope.EMAIL],
    });
    return identityToken ? signedIn(client, identityToken) : false;
}

/** Sign in with Google (`GoogleSignin.configure({ webClientId })` once at launch: the ID token's audience). False if cancelled. */
export async function signInWithGoogle(client: SyncClient): Promise<boolean> {
    await GoogleSignin.hasPlayServices();
    const response = await GoogleSignin.signIn();
    return response.type === "success" && response.data.idToken ? signedIn(client, response.data.idToken) : false;
}

async function signedIn(client: SyncClient, idToken: string): Promise<boolean> {
    await client.signIn({ idToken, space: "Home" }); // protocol §14; `space` names a new account's home space
    await client.sync(); // the whole replica at once; then live mode keeps it current
    return true;
}
// #endregion rn-sign-in

// #region rn-hooks
import { useEffect, useState } from "react";
import { SyncStatus, typed } from "@syncapi/client";
import type { Contact, FamilyCollections } from "./model.js";

/** The contacts by name: the component draws them again when a sync or a write changes them, and only then. */
export function useContacts(client: SyncClient): Contact[] {
    const [contacts, setContacts] = useState<Contact[]>([]);
    useEffect(() => typed<FamilyCollections>(client).query("contacts").orderBy("lastName").orderBy("firstName").observe(setContacts), [client]);
    return contacts;
}

/** What a badge shows: offline, syncing, writes waiting or refused, live. */
export function useSyncStatus(client: SyncClient): SyncStatus {
    const [status, setStatus] = useState(client.status);
    useEffect(() => client.onStatus(setStatus), [client]);
    return status;
}
// In a screen: const contacts = useContacts(client); <FlatList data={contacts} keyExtractor={(contact) => contact.id} … />
// #endregion rn-hooks
