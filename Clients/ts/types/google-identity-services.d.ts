// The part of Google Identity Services for the web (the `google.accounts.id` global of
// https://accounts.google.com/gsi/client) that examples/web.ts uses, declared here because this repository installs no
// npm package: only the documented signatures it calls, https://developers.google.com/identity/gsi/web/reference/js-reference.
// Not shipped.

declare namespace google.accounts.id {
    /** What the sign-in's callback receives: `credential` is the ID token (a JWT whose audience is `client_id`). */
    interface CredentialResponse {
        credential: string;
        select_by?: string;
    }
    function initialize(config: { client_id: string; callback: (response: CredentialResponse) => void; auto_select?: boolean }): void;
    function renderButton(parent: HTMLElement, options: { type: "standard" | "icon"; theme?: "outline" | "filled_blue" | "filled_black"; size?: "large" | "medium" | "small" }): void;
}
