// The streaming JSON tokenizer a big sync answer is read with (src/stream-json.ts): every value as JSON.parse reads
// it, whatever the chunks' boundaries (inside a string, an escape, a multi-byte character, a number), and every
// malformed or cut input refused.
import assert from "node:assert/strict";
import { test } from "node:test";
import { JsonValue } from "../src/index.js";
import { JsonStreamReader } from "../src/stream-json.js";

class Malformed extends Error {}

function reader(bytes: Uint8Array, size: number): JsonStreamReader {
    let offset = 0;
    return new JsonStreamReader(
        async () => {
            if (offset >= bytes.length) return undefined;
            const chunk = bytes.subarray(offset, offset + size);
            offset += size;
            return chunk;
        },
        () => new Malformed("malformed")
    );
}

/** The value read back by walking it with the reader's calls (objects and arrays entered, the rest read whole). */
async function walk(json: JsonStreamReader, depth: number): Promise<JsonValue> {
    const next = await json.peek();
    if (depth > 0 && next === 0x7b) {
        await json.beginObject();
        const object: Record<string, JsonValue> = {};
        for (let key = await json.nextKey(); key !== undefined; key = await json.nextKey()) object[key] = await walk(json, depth - 1);
        return object;
    }
    if (depth > 0 && next === 0x5b) {
        await json.beginArray();
        const array: JsonValue[] = [];
        while (await json.nextElement()) array.push(await walk(json, depth - 1));
        return array;
    }
    return json.value();
}

async function readAll(text: string, size: number, depth: number): Promise<JsonValue> {
    const json = reader(new TextEncoder().encode(text), size);
    const value = await walk(json, depth);
    await json.end();
    return value;
}

test("the streaming tokenizer reads every value as JSON.parse does, whatever the chunks' boundaries", async () => {
    const samples = [
        '{"responses":[{"id":"ctcsync","status":200,"headers":{"ETag":"\\"d\\""},"body":{"date":"a.b.3","sync":false,"updated":[{"id":"c1","n":-1.5e3,"ok":true,"x":null,"s":"a \\"q\\" \\\\ \\u00e9 é 😀 ]}"},{"id":"c2","list":[1,[2,{"k":[]}],{}]}],"deleted":["c3"]}}]}',
        ' \n {"a" : [ 1 , 2.25 , -0 , 1e-7 , "x" , true , false , null ] , "b" : { } , "c" : [ ] } \r\n',
        '[{"\\\\":"\\\\"},"\\"",123456789,"üñî€𝄞"]',
        '"just a string"',
        "42",
        "null",
    ];
    for (const text of samples) {
        for (const size of [1, 2, 3, 5, 7, 64, 100_000]) {
            for (const depth of [0, 1, 2, 3, 8]) {
                assert.deepEqual(await readAll(text, size, depth), JSON.parse(text), `${text} in chunks of ${size}, walked ${depth} deep`);
            }
        }
    }
});

test("the streaming tokenizer refuses malformed, cut or trailing input", async () => {
    const bad = ['{"a":1', '{"a":1,}', '{"a" 1}', '{"a":[1,2}', '[1 2]', '{"a":1}}', '{"a":1} x', '{"a":"x', '{a:1}', "", "[,1]", '{"a":tru}', "[1,]"];
    for (const text of bad) {
        for (const size of [1, 3, 100]) {
            for (const depth of [0, 1, 4]) {
                await assert.rejects(readAll(text, size, depth), Malformed, `${JSON.stringify(text)} in chunks of ${size}, walked ${depth} deep`);
            }
        }
    }
});
