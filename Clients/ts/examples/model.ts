// The app's generated model types (`syncapi model typescript models/family.json > src/model.ts` in an app): here the
// file scripts/check-ts-client generates with this build's server into test/generated/, so that the examples compile
// against exactly what the generator writes.
export type { Contact, Event, FamilyCollections } from "../test/generated/family.js";
