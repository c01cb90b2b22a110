// The README's "Typed queries", block for block: each `#region` below is a code block of README.md, verbatim
// (test/readme.test.ts checks the text and runs these functions against a real server).

// #region typed-queries
import { SyncClient, typed } from "@syncapi/client";
import type { Event, FamilyCollections } from "./model.js"; // generated: syncapi model typescript models/family.json > src/model.ts

/** The client through the model's types: collection names, field names, values and items are checked by the compiler. */
export async function agenda(client: SyncClient, from: string, to: string): Promise<{ events: Event[]; unnamed: number }> {
    const db = typed<FamilyCollections>(client);
    await db.save("contacts", { id: "bea", firstName: "Bea", lastName: "Brown", emails: ["bea@example.com"] }); // a Contact
    const events = await db.query("events").where("start", ">=", from).where("start", "<", to).orderBy("start").limit(20).all();
    const unnamed = await db.query("contacts").where("firstName", "==", null).count(); // a missing field is null
    return { events, unnamed };
}

/** A query observed: its items now, then again only when a sync or a write changes them (not other items). */
export function followBrowns(client: SyncClient, show: (names: string[]) => void): () => void {
    return typed<FamilyCollections>(client)
        .query("contacts")
        .where("lastName", "==", "Brown")
        .where("emails", "contains", "bea@example.com") // a list field holds the value
        .orderBy("firstName")
        .observe((contacts) => show(contacts.map((contact) => contact.firstName ?? "?")));
}
// #endregion typed-queries
