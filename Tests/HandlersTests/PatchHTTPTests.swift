import HTTPTypes
import Handlers
import Hummingbird
import HummingbirdTesting
import SyncAPI
import TestSupport
import Testing

/// PATCH (protocol §2, JSON Merge Patch, RFC 7396) on both backends: fields the patch does not name keep their
/// stored value, the result is validated whole, nothing is created, server fields and parents behave as for a PUT.
@Suite("PATCH over HTTP", .sharingTheMachine)
struct PatchHTTPTests {
    static let mergePatch: HTTPFields = [.contentType: "application/merge-patch+json"]

    @Test("an app that does not know a field never erases it; null takes the default; children and filters hold", arguments: Backend.allCases)
    func patch(backend: Backend) async throws {
        try await TestApp.run(backend) { client in
            let api = try await APIClient.signedUp(client)
            let put = try await api.call(
                .put, "/api/v1/contacts/c1", body: #"{"firstName":"Ann","emails":["a@example.org"],"notes":"Keep me"}"#)
            #expect(put.status == .ok)
            // An older app edits the first name only: the notes it does not know stay.
            let patched = try await api.call(.patch, "/api/v1/contacts/c1", body: #"{"firstName":"Anna"}"#, headers: Self.mergePatch)
            #expect(patched.status == .ok)
            #expect(patched.json?["firstName"] == .string("Anna") && patched.json?["notes"] == .string("Keep me"))
            #expect(patched.json?["emails"] == .array([.string("a@example.org")]))
            #expect(patched.headers[.eTag] != put.headers[.eTag])
            // The same patch again changes nothing: same entity tag, same version.
            let again = try await api.call(.patch, "/api/v1/contacts/c1", body: #"{"firstName":"Anna"}"#, headers: Self.mergePatch)
            #expect(again.headers[.eTag] == patched.headers[.eTag])
            // null removes an optional field; the whole result must still be valid.
            let cleared = try await api.call(.patch, "/api/v1/contacts/c1", body: #"{"notes":null,"emails":null}"#)
            #expect(cleared.json?["notes"] == .null && cleared.json?["emails"] == .array([]))
            let invalid = try await api.call(.patch, "/api/v1/contacts/c1", body: #"{"firstName":null}"#)
            #expect(invalid.status == .badRequest && invalid.json?["field"] == .string("firstName"))
            // Never creates; a deleted item is gone for PATCH too.
            #expect(try await api.call(.patch, "/api/v1/contacts/new", body: #"{"firstName":"X"}"#).status == .notFound)
            #expect(try await api.call(.delete, "/api/v1/contacts/c1").status == .noContent)
            #expect(try await api.call(.patch, "/api/v1/contacts/c1", body: #"{"firstName":"X"}"#).status == .notFound)

            // A message: its author and created stay, its thread moves in the sync.
            #expect(try await api.call(.put, "/api/v1/threads/t1", body: #"{"title":"T"}"#).status == .ok)
            let message = try await api.call(.put, "/api/v1/threads/t1/messages/m1", body: #"{"text":"hi"}"#)
            let thread = try await api.call(.get, "/api/v1/threads/t1")
            let edited = try await api.call(.patch, "/api/v1/threads/t1/messages/m1", body: #"{"text":"hello","author":"someone"}"#)
            #expect(edited.status == .ok && edited.json?["text"] == .string("hello"))
            #expect(edited.json?["author"] == message.json?["author"] && edited.json?["created"] == message.json?["created"])
            #expect(try await api.call(.get, "/api/v1/threads/t1").json?["modified"] != thread.json?["modified"])
            #expect(try await api.call(.patch, "/api/v1/threads/t9/messages/m1", body: #"{"text":"x"}"#).status == .notFound)
            // A wall post's type stays immutable through PATCH.
            #expect(try await api.call(.put, "/api/v1/wall/p1", body: #"{"type":"text","text":"a"}"#).status == .ok)
            let retyped = try await api.call(.patch, "/api/v1/wall/p1", body: #"{"type":"link"}"#)
            #expect(retyped.status == .conflict && retyped.json?["code"] == .string("type_immutable"))
            // Singletons always exist: a patch applies to their current content.
            let settings = try await api.call(.patch, "/api/v1/settings", body: #"{"timeZone":"Europe/Paris"}"#)
            #expect(settings.status == .ok && settings.json?["timeZone"] == .string("Europe/Paris"))
            #expect(settings.json?["notifications"] == .bool(true))
            let family = try await api.call(.patch, "/api/v1/family", body: #"{"pictureUrl":"https://example.org/f.png"}"#)
            #expect(family.status == .ok && family.json?["name"] != .null)
            // Content types: merge-patch or JSON; anything else 415 before the body is read.
            let form = try await api.call(.patch, "/api/v1/settings", body: "locale=fr", headers: [.contentType: "application/x-www-form-urlencoded"])
            #expect(form.status == .unsupportedMediaType)
            #expect(try await api.call(.patch, "/api/v1/settings", body: "[]").json?["code"] == .string("invalid_json"))
        }
    }

    @Test("a PATCH whose If-Match names an old version is 412; two patches of different fields both land", arguments: Backend.allCases)
    func concurrentPatches(backend: Backend) async throws {
        try await TestApp.run(backend) { client in
            let api = try await APIClient.signedUp(client)
            let put = try await api.call(.put, "/api/v1/events/e1", body: #"{"title":"Party","start":"2026-12-31T20:00:00Z"}"#)
            let old = try #require(put.headers[.eTag])
            async let a = api.call(.patch, "/api/v1/events/e1", body: #"{"location":"Home"}"#)
            async let b = api.call(.patch, "/api/v1/events/e1", body: #"{"allDay":true}"#)
            #expect(try await [a.status, b.status] == [.ok, .ok])
            let final = try await api.call(.get, "/api/v1/events/e1")
            #expect(final.json?["location"] == .string("Home") && final.json?["allDay"] == .bool(true))
            let stale = try await api.call(.patch, "/api/v1/events/e1", body: #"{"title":"Late"}"#, headers: [.ifMatch: old])
            #expect(stale.status == .preconditionFailed)
            // A rule over several fields is checked on the merged result.
            let backwards = try await api.call(.patch, "/api/v1/events/e1", body: #"{"end":"2026-12-31T19:00:00Z"}"#)
            #expect(backwards.status == .badRequest && backwards.json?["field"] == .string("end"))
        }
    }
    /// Security audit H1: a 1 MiB patch of 130,000 members cost ~42 s of CPU under the family's lock (the merge was
    /// quadratic) and answered 503. The patch is keyed and checked before the write now.
    @Test(
        "a 1 MiB patch of 130,000 unknown members is refused before the write, and a name given 40,000 times at parsing", arguments: Backend.allCases)
    func hugePatch(backend: Backend) async throws {
        try await TestApp.run(backend) { client in
            let api = try await APIClient.signedUp(client)
            let letters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
            var members: [String] = []
            members.reserveCapacity(130_000)
            outer: for a in letters {
                for b in letters {
                    for c in letters {
                        members.append("\"\(a)\(b)\(c)\":0")
                        if members.count == 130_000 { break outer }
                    }
                }
            }
            let bomb = "{" + members.joined(separator: ",") + "}"
            let refused = try await api.call(.patch, "/api/v1/settings", body: bomb, headers: Self.mergePatch)
            #expect(
                refused.status == .badRequest && refused.json?["code"] == .string("unknown_field"), "\(refused.status) \(refused.body.prefix(200))")
            // The family's writes go on: nothing of the patch ran under its lock.
            #expect(try await api.call(.put, "/api/v1/contacts/c1", body: #"{"firstName":"Ann"}"#).status == .ok)
            // A name given 40,000 times: the strict parser refuses the duplicate at once.
            let repeated = "{" + (0..<40_000).map { #""firstName":"A\#($0)""# }.joined(separator: ",") + "}"
            let duplicated = try await api.call(.patch, "/api/v1/contacts/c1", body: repeated, headers: Self.mergePatch)
            #expect(duplicated.status == .badRequest && duplicated.json?["code"] == .string("invalid_json"))
        }
    }
    /// Security audit L2: an authored collection without a sort position (a wall post's comments) rewrote `created` on
    /// every update.
    @Test("an authored item keeps its created time through PUT and PATCH", arguments: Backend.allCases)
    func createdKept(backend: Backend) async throws {
        try await TestApp.run(backend) { client in
            let api = try await APIClient.signedUp(client)
            #expect(try await api.call(.put, "/api/v1/wall/p1", body: #"{"type":"text","text":"a"}"#).status == .ok)
            let first = try await api.call(.put, "/api/v1/wall/p1/comments/k1", body: #"{"text":"one"}"#)
            let created = try #require(first.json?["created"])
            // Updated later (a later millisecond: each call is a round trip).
            var n = 0
            var updated = first
            while updated.json?["modified"] == first.json?["modified"], n < 1000 {
                n += 1
                updated = try await api.call(.put, "/api/v1/wall/p1/comments/k1", body: #"{"text":"edit \#(n)"}"#)
            }
            #expect(updated.json?["created"] == created)
            let patched = try await api.call(.patch, "/api/v1/wall/p1/comments/k1", body: #"{"text":"four"}"#, headers: Self.mergePatch)
            #expect(patched.status == .ok && patched.json?["created"] == created)
        }
    }
}
