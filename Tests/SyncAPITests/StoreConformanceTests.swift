import SyncAPI
import TestSupport
import Testing

extension Delta {
    /// The contacts rows of a delta.
    var contacts: [StoredItem] { rows["contacts"] ?? [] }
}

/// One conformance suite, run on SQLite and on a real PostgreSQL: both stores must behave the same.
@Suite("Store conformance", .sharingTheMachine)
struct StoreConformanceTests {
    static func account(_ name: String) -> NewAccount {
        NewAccount(
            id: DatabaseIdentity.uuid(), username: name, displayName: name, passwordHash: "hash-\(name)",
            profileBody: #"{"id":"x","username":"\#(name)"}"#, settingsBody: "{}",
            settingsCollection: Collections.registry.accountSingleton?.name)
    }

    /// A store with one family; returns the family id.
    static func family(_ store: any SyncStore, _ user: String = "alice") async throws -> String {
        let id = DatabaseIdentity.uuid()
        try await store.createFamily(id: id, name: "Smith", familyBody: "{}", account: account(user), nowMs: 1000)
        return id
    }

    static func put(
        _ store: any SyncStore, _ family: String, _ id: String, _ body: String, collection: String = "contacts"
    )
        async throws -> WriteOutcome
    {
        try await store.write(spaceID: family, key: ItemKey(collection: collection, id: id), parent: nil, nowMs: 2000) { _ in
            .write([RowWrite(key: ItemKey(collection: collection, id: id), body: body)])
        }
    }

    static func delete(_ store: any SyncStore, _ family: String, _ id: String) async throws -> WriteOutcome {
        try await store.write(spaceID: family, key: ItemKey(collection: "contacts", id: id), parent: nil, nowMs: 3000) { context in
            context.existing?.live == nil ? .unchanged : .write([RowWrite(key: ItemKey(collection: "contacts", id: id), body: nil)])
        }
    }

    @Test("migrate is idempotent and the database id is stable", arguments: Backend.allCases)
    func migrateTwice(backend: Backend) async throws {
        try await backend.withStore { store in
            let first = try await store.databaseID()
            try await store.migrate()
            #expect(try await store.databaseID() == first)
            #expect(first.count == 16)
            try await store.ping()
        }
    }

    @Test("usernames are unique case-insensitively across families", arguments: Backend.allCases)
    func usernameUnique(backend: Backend) async throws {
        try await backend.withStore { store in
            let family = try await Self.family(store, "Alice")
            await #expect(throws: SyncError.usernameTaken) {
                try await store.createFamily(id: DatabaseIdentity.uuid(), name: "Other", familyBody: "{}", account: Self.account("alice"), nowMs: 1)
            }
            await #expect(throws: SyncError.usernameTaken) {
                try await store.createAccount(Self.account("ALICE"), spaceID: family, nowMs: 1)
            }
            try await store.createAccount(Self.account("bob"), spaceID: family, nowMs: 1)
            let credentials = try #require(try await store.credentials(usernameKey: "bob"))
            #expect(credentials.spaceID == family)
            #expect(credentials.passwordHash == "hash-bob")
            #expect(try await store.credentials(usernameKey: "carol") == nil)
        }
    }

    /// Security audit 651e0ee L8: the owner is the family's oldest account by `created_ms`, each instance's own clock;
    /// an instance whose clock was behind made a new member older than the owner, who could then be deleted by it.
    @Test("the owner stays the family's first account whatever the clock of the instance adding a member", arguments: Backend.allCases)
    func ownerDespiteClockSkew(backend: Backend) async throws {
        try await backend.withStore { store in
            let family = try await Self.family(store, "founder")
            // The family was created at 1000 ms; an instance whose clock reads 1 ms adds two members.
            try await store.createAccount(Self.account("member1"), spaceID: family, nowMs: 1)
            try await store.createAccount(Self.account("member2"), spaceID: family, nowMs: 1)
            #expect(try await store.accounts(spaceID: family).map(\.username) == ["founder", "member1", "member2"])
        }
    }

    @Test("tokens expire and can be revoked", arguments: Backend.allCases)
    func tokens(backend: Backend) async throws {
        try await backend.withStore { store in
            let family = try await Self.family(store)
            let credentials = try #require(try await store.credentials(usernameKey: "alice"))
            let session = AccountSession(
                accountID: credentials.accountID, signupSpaceID: family,
                memberships: [SpaceMembership(spaceID: family, role: .owner, sinceVersion: 0)])
            try await store.insertToken(hash: "h1", accountID: credentials.accountID, expiresMs: 5000)
            #expect(try await store.session(tokenHash: "h1", nowMs: 4999)?.session == session)
            #expect(try await store.session(tokenHash: "h1", nowMs: 5000) == nil)
            #expect(try await store.session(tokenHash: "nope", nowMs: 0) == nil)
            try await store.deleteToken(hash: "h1")
            #expect(try await store.session(tokenHash: "h1", nowMs: 0) == nil)
            // A password change revokes every other token of the account at once.
            for hash in ["keep", "other1", "other2"] { try await store.insertToken(hash: hash, accountID: credentials.accountID, expiresMs: 5000) }
            try await store.changePassword(accountID: credentials.accountID, passwordHash: "new-hash", keepTokenHash: "keep")
            #expect(try await store.session(tokenHash: "keep", nowMs: 0)?.session == session)
            #expect(try await store.session(tokenHash: "other1", nowMs: 0) == nil)
            #expect(try await store.credentials(accountID: credentials.accountID)?.credentials.passwordHash == "new-hash")
        }
    }

    @Test("a space is made, or an invitation accepted, only by an account that still exists", arguments: Backend.allCases)
    func membershipsOfGoneAccounts(backend: Backend) async throws {
        try await backend.withStore { store in
            let family = try await Self.family(store)
            let gone = DatabaseIdentity.uuid()
            await #expect(throws: SyncError.unauthorized) {
                try await store.createSpace(
                    id: DatabaseIdentity.uuid(), name: "Club", familyItem: nil, ownerID: gone, nowMs: 2000, limits: SpaceLimits())
            }
            try await store.insertInvitation(
                NewInvitation(hash: "code", spaceID: family, role: .member, uses: 1, expiresMs: 9000), nowMs: 2000, limits: SpaceLimits())
            await #expect(throws: SyncError.unauthorized) {
                try await store.acceptInvitation(hash: "code", accountID: gone, nowMs: 2000, limits: SpaceLimits())
            }
            // Nothing of either stayed: the invitation is still unused, the space has its one member.
            #expect(try await store.members(spaceID: family).count == 1)
            let home = try await Self.family(store, "carol")
            let carol = try #require(try await store.credentials(usernameKey: "carol")).accountID
            let club = DatabaseIdentity.uuid()
            try await store.createSpace(id: club, name: "Club", familyItem: nil, ownerID: carol, nowMs: 2000, limits: SpaceLimits())
            let joined = try #require(try await store.acceptInvitation(hash: "code", accountID: carol, nowMs: 2000, limits: SpaceLimits()))
            #expect(joined.id == family && joined.role == .member)
            #expect(try await store.spaces(accountID: carol).map(\.id) == [home, club, family])
            #expect(try await store.members(spaceID: family).map(\.accountID).last == carol)
        }
    }

    @Test("login attempts count atomically per key inside a window, and a success is forgiven", arguments: Backend.allCases)
    func loginThrottle(backend: Backend) async throws {
        try await backend.withStore { store in
            let keys = ["p:alice|1.2.3.4", "a:1.2.3.4", "u:alice"]
            // 40 parallel attempts count 40: no two read the same count.
            let counts = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<40 {
                    group.addTask { try await store.countLoginAttempt(keys: keys, nowMs: 1000, windowMs: 100)["u:alice"]!.attempts }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(counts.sorted() == Array(1...40))
            try await store.forgiveLoginAttempt(resetKey: keys[0], uncountKeys: [keys[1], keys[2]])
            let after = try await store.countLoginAttempt(keys: keys, nowMs: 1050, windowMs: 100)
            #expect(after[keys[0]] == ThrottleWindow(attempts: 1, startMs: 1000))
            #expect(after[keys[2]] == ThrottleWindow(attempts: 40, startMs: 1000))
            // A window that ended starts over, carrying the old count weighted by how much of the last window it still
            // covers (a sliding window): just after the end, nearly all of it (40 → 1 + 40 × 95 / 100 = 39); a whole
            // window later, none.
            let slid = try await store.countLoginAttempt(keys: keys, nowMs: 1105, windowMs: 100)
            #expect(slid[keys[1]] == ThrottleWindow(attempts: 39, startMs: 1105))
            let fresh = try await store.countLoginAttempt(keys: keys, nowMs: 1305, windowMs: 100)
            #expect(fresh[keys[1]] == ThrottleWindow(attempts: 1, startMs: 1305))
            // Old windows and expired tokens are cleaned up.
            let family = try await Self.family(store)
            let credentials = try #require(try await store.credentials(usernameKey: "alice"))
            let session = AccountSession(
                accountID: credentials.accountID, signupSpaceID: family,
                memberships: [SpaceMembership(spaceID: family, role: .owner, sinceVersion: 0)])
            try await store.insertToken(hash: "old", accountID: credentials.accountID, expiresMs: 500)
            try await store.insertToken(hash: "live", accountID: credentials.accountID, expiresMs: 5000)
            #expect(try await store.purgeExpired(nowMs: 2000, throttleBeforeMs: 1500) == 4)
            #expect(try await store.session(tokenHash: "live", nowMs: 2000)?.session == session)
            #expect(try await store.countLoginAttempt(keys: keys, nowMs: 2000, windowMs: 100)[keys[2]]?.attempts == 1)
        }
    }

    @Test("counting and forgiving login attempts of the same keys at once never deadlocks", arguments: Backend.allCases)
    func loginThrottleNoDeadlock(backend: Backend) async throws {
        try await backend.withStore { store in
            // Keys whose sorted order differs from their insertion order, so that a lock order taken from the table
            // differs from the sorted one.
            let keys = ["u:zed", "p:zed|9.9.9.9", "a:9.9.9.9"]
            for key in keys.reversed() { _ = try await store.countLoginAttempt(keys: [key], nowMs: 1000, windowMs: 60_000) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for n in 0..<60 {
                    group.addTask {
                        if n % 2 == 0 {
                            _ = try await store.countLoginAttempt(keys: keys, nowMs: 1000, windowMs: 60_000)
                        } else {
                            try await store.forgiveLoginAttempt(resetKey: keys[n % 3], uncountKeys: keys)
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await store.lastLogin(key: keys[0]) == 1000)
        }
    }

    @Test("every write takes the next version; a delta returns exactly what changed after a version", arguments: Backend.allCases)
    func versionsAndDelta(backend: Backend) async throws {
        try await backend.withStore { store in
            let family = try await Self.family(store)
            let start = try await store.delta(spaceID: family, collections: ["contacts"], since: nil)
            #expect(start.contacts.isEmpty)
            let a = try await Self.put(store, family, "a", "{\"id\":\"a\"}")
            let b = try await Self.put(store, family, "b", "{\"id\":\"b\"}")
            #expect(a.item?.version == start.version + 1 && b.item?.version == start.version + 2)
            _ = try await Self.put(store, family, "p", "{\"id\":\"p\"}", collection: "places")
            let full = try await store.delta(spaceID: family, collections: ["contacts"], since: nil)
            #expect(full.contacts.map(\.id) == ["a", "b"])
            #expect(full.version == start.version + 3)
            _ = try await Self.put(store, family, "a", "{\"id\":\"a\",\"v\":2}")
            _ = try await Self.delete(store, family, "b")
            let delta = try await store.delta(spaceID: family, collections: ["contacts"], since: full.version)
            #expect(delta.contacts.map(\.id) == ["a", "b"])
            #expect(delta.contacts[0].body == "{\"id\":\"a\",\"v\":2}" && !delta.contacts[0].deleted)
            #expect(delta.contacts[1].deleted && delta.contacts[1].body == nil)
            // A full answer never carries tombstones.
            #expect(try await store.delta(spaceID: family, collections: ["contacts"], since: nil).contacts.map(\.id) == ["a"])
            #expect(try await store.delta(spaceID: family, collections: ["contacts"], since: delta.version).contacts.isEmpty)
        }
    }

    @Test("unchanged plans and deletes of missing items use no version", arguments: Backend.allCases)
    func unchangedWrites(backend: Backend) async throws {
        try await backend.withStore { store in
            let family = try await Self.family(store)
            let before = try await store.delta(spaceID: family, collections: ["contacts"], since: nil).version
            let missing = try await Self.delete(store, family, "ghost")
            #expect(!missing.changed)
            let kept = try await store.write(spaceID: family, key: ItemKey(collection: "contacts", id: "x"), parent: nil, nowMs: 1) { _ in .unchanged
            }
            #expect(!kept.changed && kept.item == nil)
            #expect(try await store.delta(spaceID: family, collections: ["contacts"], since: nil).version == before)
        }
    }

    @Test("a tombstone comes back to life with a new version", arguments: Backend.allCases)
    func resurrection(backend: Backend) async throws {
        try await backend.withStore { store in
            let family = try await Self.family(store)
            _ = try await Self.put(store, family, "a", "{\"id\":\"a\"}")
            let deleted = try await Self.delete(store, family, "a")
            let again = try await Self.delete(store, family, "a")
            #expect(deleted.changed && !again.changed)
            let tomb = try #require(try await store.item(spaceID: family, key: ItemKey(collection: "contacts", id: "a")))
            #expect(tomb.deleted)
            let back = try await Self.put(store, family, "a", "{\"id\":\"a\",\"n\":1}")
            #expect(back.item!.version > tomb.version)
            let live = try #require(try await store.item(spaceID: family, key: ItemKey(collection: "contacts", id: "a")))
            #expect(!live.deleted && live.body == "{\"id\":\"a\",\"n\":1}")
        }
    }

    @Test("families never see each other's items or counters", arguments: Backend.allCases)
    func tenancy(backend: Backend) async throws {
        try await backend.withStore { store in
            let smith = try await Self.family(store, "alice")
            let jones = try await Self.family(store, "bob")
            _ = try await Self.put(store, smith, "same", "{\"id\":\"same\",\"f\":\"smith\"}")
            _ = try await Self.put(store, jones, "same", "{\"id\":\"same\",\"f\":\"jones\"}")
            _ = try await Self.delete(store, smith, "same")
            #expect(try await store.item(spaceID: jones, key: ItemKey(collection: "contacts", id: "same"))?.deleted == false)
            let jonesRows = try await store.delta(spaceID: jones, collections: ["contacts"], since: nil)
            #expect(jonesRows.contacts.map(\.body) == ["{\"id\":\"same\",\"f\":\"jones\"}"])
            #expect(try await store.delta(spaceID: smith, collections: ["contacts"], since: nil).contacts.isEmpty)
        }
    }

    @Test("a plan that throws changes nothing", arguments: Backend.allCases)
    func planThrows(backend: Backend) async throws {
        try await backend.withStore { store in
            let family = try await Self.family(store)
            let before = try await store.delta(spaceID: family, collections: ["contacts"], since: nil).version
            await #expect(throws: SyncError.preconditionFailed) {
                _ = try await store.write(spaceID: family, key: ItemKey(collection: "contacts", id: "a"), parent: nil, nowMs: 1) { _ in
                    throw SyncError.preconditionFailed
                }
            }
            #expect(try await store.delta(spaceID: family, collections: ["contacts"], since: nil).version == before)
            #expect(try await store.item(spaceID: family, key: ItemKey(collection: "contacts", id: "a")) == nil)
        }
    }

    @Test("purging old tombstones raises the horizon past them; newer ones stay", arguments: Backend.allCases)
    func purge(backend: Backend) async throws {
        try await backend.withStore { store in
            let family = try await Self.family(store)
            let other = try await Self.family(store, "bob")
            _ = try await Self.put(store, family, "a", "{\"id\":\"a\"}")
            _ = try await Self.put(store, family, "b", "{\"id\":\"b\"}")
            let before = try await store.delta(spaceID: family, collections: ["contacts"], since: nil).version
            let gone = try await Self.delete(store, family, "a")  // modified_ms 3000
            _ = try await store.write(spaceID: family, key: ItemKey(collection: "contacts", id: "b"), parent: nil, nowMs: 9000) { _ in
                .write([RowWrite(key: ItemKey(collection: "contacts", id: "b"), body: nil)])
            }
            #expect(try await store.purgeTombstones(cutoffMs: 5000) == 1)
            let after = try await store.delta(spaceID: family, collections: ["contacts"], since: before)
            #expect(after.horizon == gone.item?.version)
            #expect(before < after.horizon, "a date before the purge can no longer be answered exactly")
            #expect(after.contacts.map(\.id) == ["b"], "the newer tombstone stays")
            #expect(try await store.item(spaceID: family, key: ItemKey(collection: "contacts", id: "a")) == nil)
            #expect(try await store.delta(spaceID: other, collections: ["contacts"], since: nil).horizon == 0)
            #expect(try await store.purgeTombstones(cutoffMs: 5000) == 0)
            // The engine answers such a date with a full list.
            let engine = SyncEngine(store: store, producers: .testing, collections: Collections.registry)
            let session = Session(accountID: "x", spaceID: family, role: .owner)
            let old = SyncToken(databaseID: try await store.databaseID(), spaceID: family, version: before).string
            let answer = try JSONParser.parse(try await engine.fullListSync(session, Collections.contacts, date: old, ifNoneMatch: nil).wholeBody())
            #expect(answer["sync"] == .bool(false))
            let current = SyncToken(databaseID: try await store.databaseID(), spaceID: family, version: after.horizon).string
            let exact = try JSONParser.parse(
                try await engine.fullListSync(session, Collections.contacts, date: current, ifNoneMatch: nil).wholeBody())
            #expect(exact["sync"] == .bool(true) && exact["deleted"] == .array([.string("b")]))
        }
    }
}
