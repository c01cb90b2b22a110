/**
 * Says when the app comes to the foreground and when it leaves it. It exists so that the client can push the writes
 * that waited and reopen live mode when the user comes back, and close live mode when the app goes to the background,
 * with no dependency on a platform: `reactNativeAppState(AppState)` and `documentVisibility(document)` adapt the two
 * usual sources; any other is a `subscribe` function.
 */
export interface AppStateLike {
    /** Calls `listener` with true when the app comes to the foreground, false when it leaves; answers the function that stops it. */
    subscribe(listener: (foreground: boolean) => void): () => void;
}

/** The shape of React Native's `AppState` this client uses: typed by structure so that the package imports no React Native. */
export interface ReactNativeAppState {
    addEventListener(type: "change", listener: (state: string) => void): { remove(): void };
}

/** React Native's `AppState`: `active` is the foreground; `background` (and iOS's `inactive`) are not. */
export function reactNativeAppState(appState: ReactNativeAppState): AppStateLike {
    return {
        subscribe(listener) {
            const subscription = appState.addEventListener("change", (state) => listener(state === "active"));
            return () => subscription.remove();
        },
    };
}

/** The shape of a browser's `document` this client uses: typed by structure so that non-browser builds need no DOM. */
export interface VisibilityDocument {
    readonly visibilityState: string;
    addEventListener(type: "visibilitychange", listener: () => void): void;
    removeEventListener(type: "visibilitychange", listener: () => void): void;
}

/** A browser page's visibility (`visibilitychange`): a visible page is the foreground. */
export function documentVisibility(document: VisibilityDocument): AppStateLike {
    return {
        subscribe(listener) {
            const changed = (): void => listener(document.visibilityState === "visible");
            document.addEventListener("visibilitychange", changed);
            return () => document.removeEventListener("visibilitychange", changed);
        },
    };
}

/** What the client does at each change of the app's state: kept apart from the client so that the rule is tested on its own. */
export interface LifecycleActions {
    /** Back in the foreground: push what waits, reopen live mode if the app wanted it. */
    foreground(): void;
    /** In the background: close live mode (still wanted), push what waits while the app may still run. */
    background(): void;
}

/** Follows `source`, telling `actions` of each change (the same state twice in a row is told once); answers the function that stops it. */
export function followAppState(source: AppStateLike, actions: LifecycleActions): () => void {
    let last: boolean | undefined;
    return source.subscribe((foreground) => {
        if (foreground === last) return;
        last = foreground;
        if (foreground) actions.foreground();
        else actions.background();
    });
}
