// The few React Native APIs examples/react-native.ts uses, declared here so that the example type-checks in this
// repository, which installs no npm package (an app has the libraries' own declarations instead). Only the documented
// signatures the example calls, narrowed to what it passes; not shipped, and the package itself imports none of these.

// React Native's AppState: https://reactnative.dev/docs/appstate
declare module "react-native" {
    export const AppState: {
        readonly currentState: string;
        addEventListener(type: "change", listener: (state: string) => void): { remove(): void };
    };
}

// React's hooks: https://react.dev/reference/react/useState and https://react.dev/reference/react/useEffect
declare module "react" {
    export function useState<S>(initial: S | (() => S)): [S, (value: S | ((previous: S) => S)) => void];
    export function useEffect(effect: () => void | (() => void), dependencies?: readonly unknown[]): void;
}

// op-sqlite's `open`: https://op-engineering.github.io/op-sqlite/ (the database object it answers is typed by
// structure in src/storage/op-sqlite.ts, `OpSqliteDatabase`).
declare module "@op-engineering/op-sqlite" {
    import type { OpSqliteDatabase } from "@syncapi/client";
    export function open(options: { name: string; location?: string; encryptionKey?: string }): OpSqliteDatabase;
}

// react-native-keychain's generic passwords (v10): https://oblador.github.io/react-native-keychain
declare module "react-native-keychain" {
    export interface UserCredentials {
        username: string;
        password: string;
        service: string;
    }
    export function setGenericPassword(username: string, password: string, options?: { service?: string }): Promise<false | { service: string }>;
    export function getGenericPassword(options?: { service?: string }): Promise<false | UserCredentials>;
    export function resetGenericPassword(options?: { service?: string }): Promise<boolean>;
}

// Sign in with Apple, @invertase/react-native-apple-authentication:
// https://github.com/invertase/react-native-apple-authentication (typedocs/variables/appleAuth.md, AppleRequestResponse)
declare module "@invertase/react-native-apple-authentication" {
    export enum AppleRequestOperation {
        IMPLICIT = 0,
        LOGIN = 1,
        REFRESH = 2,
        LOGOUT = 3,
    }
    export enum AppleRequestScope {
        EMAIL = 0,
        FULL_NAME = 1,
    }
    export interface AppleRequestResponse {
        user: string;
        /** A JSON Web Token signed by Apple (issuer https://appleid.apple.com, audience the app's bundle id). */
        identityToken: string | null;
        authorizationCode: string | null;
        email: string | null;
    }
    export const appleAuth: {
        readonly isSupported: boolean;
        readonly Operation: typeof AppleRequestOperation;
        readonly Scope: typeof AppleRequestScope;
        performRequest(options: { requestedOperation: AppleRequestOperation; requestedScopes?: AppleRequestScope[]; nonce?: string }): Promise<AppleRequestResponse>;
    };
}

// Google Sign-In, @react-native-google-signin/google-signin (v13 and later, the "original" module):
// https://react-native-google-signin.github.io/docs/original and https://react-native-google-signin.github.io/docs/api
declare module "@react-native-google-signin/google-signin" {
    export interface User {
        user: { id: string; email: string; name: string | null };
        scopes: string[];
        /** A JSON Web Token signed by Google (its audience: `webClientId` of `configure`). */
        idToken: string | null;
        serverAuthCode: string | null;
    }
    export type SignInResponse = { type: "success"; data: User } | { type: "cancelled"; data: null };
    export const GoogleSignin: {
        configure(options: { webClientId?: string; iosClientId?: string; scopes?: string[] }): void;
        hasPlayServices(options?: { showPlayServicesUpdateDialog: boolean }): Promise<boolean>;
        signIn(options?: { loginHint?: string }): Promise<SignInResponse>;
    };
}
