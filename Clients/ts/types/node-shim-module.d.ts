// Node.js's module customization hooks (`register`, Node 20.6+), which test/examples.test.ts uses to give the React
// Native example stand-ins for its libraries. Only the signature used; not shipped. https://nodejs.org/api/module.html#moduleregisterspecifier-parenturl-options
declare module "node:module" {
    export function register(specifier: string, parentURL?: string): void;
}
