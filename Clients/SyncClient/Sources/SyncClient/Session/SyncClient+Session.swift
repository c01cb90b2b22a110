import Foundation
import GRDB

extension SyncClient {
    /// Creates a family and its first account, and signs in (`POST /signup`).
    public func signUp(family: String, username: String, password: String) async throws {
        try await signIn("/signup", ["family": .string(family), "username": .string(username), "password": .string(password)], expected: 201)
    }

    /// Signs in to an existing account (`POST /login`).
    public func logIn(username: String, password: String) async throws {
        try await signIn("/login", ["username": .string(username), "password": .string(password)], expected: 200)
    }

    private func signIn(_ path: String, _ body: JSONObject, expected: Int) async throws {
        // A throttled sign-in (429) is the server saying "stop guessing": never retried. A busy one (503) is.
        let answer = try await configuration.retryPolicy.run(retrying: { $0.isTransient && $0.status != 429 }) {
            let answer = try await self.call("POST", path, body: .object(body), auth: false)
            if answer.status == 503 { throw SyncClientError.from(answer) }
            return answer
        }
        guard answer.status == expected, let grant = try? JSONDecoder().decode(Grant.self, from: answer.body) else {
            throw SyncClientError.from(answer)
        }
        let new = ClientSession(token: grant.token, accountID: grant.accountId, familyID: grant.familyId, expiresAt: grant.expiresAt)
        try await replica.pool.write { db in
            // Another account's data never shows through, nor its unsent writes; the same account keeps its replica
            // (and its offline writes) across a lost session.
            if try Replica.meta(db, MetaKey.account) != new.accountID {
                try Replica.eraseData(db)
                try Self.eraseMedia(db, self.mediaStore)
                try Replica.setMeta(db, MetaKey.account, new.accountID)
            }
        }
        try configuration.tokenStore.save(new)
        session.withLock { $0 = new }
        try refreshCounts()
        statusCenter.update {
            $0.signedIn = true
            $0.lastError = nil
            if case .error = $0.state { $0.state = .idle }
        }
        // The server's model, read with the session (a sync reads it anyway if this fails).
        _ = try? await serverModel(refresh: true)
        try? refreshCounts()
        // Live mode asked for before (or ended by a lost session) comes back with the session; writes made offline go.
        resumeLive()
        schedulePush()
    }

    /// Signs out: pushes unsent writes first (unless `discardingPendingWrites`; throws, signed in still, when some
    /// cannot be pushed), revokes the token on the server, and erases the replica's data (the file stays: observers
    /// keep working and see empty results).
    public func logOut(discardingPendingWrites: Bool = false) async throws {
        if !discardingPendingWrites, try !pendingOperations().isEmpty {
            try await push()
            let left = try pendingOperations().count
            guard left == 0 else { throw SyncClientError.unpushedWrites(try pendingOperations()) }
        }
        await stopLive()
        await cancelScheduledPush()
        if isSignedIn {
            // Offline: the token is forgotten here; it expires on the server.
            _ = try? await call("POST", "/logout")
        }
        try configuration.tokenStore.clear()
        session.withLock { $0 = nil }
        // After a sync that was running, never before it: its answers must not land in the erased replica.
        try await flight.exclusive {
            try await self.replica.pool.write { db in
                try Replica.eraseData(db)
                try Self.eraseMedia(db, self.mediaStore)
            }
        }
        try refreshCounts()
        statusCenter.update {
            $0.signedIn = false
            $0.state = .idle
            $0.lastSuccessfulSync = nil
            $0.lastError = nil
        }
    }

    /// The token stopped working (logout elsewhere, password change, expiry): the session is forgotten; the replica
    /// stays until the app signs in again (the same account keeps it, another erases it).
    func sessionEnded() {
        try? configuration.tokenStore.clear()
        session.withLock { $0 = nil }
        statusCenter.update {
            $0.signedIn = false
            $0.state = .error("signed out")
            $0.lastError = "the session ended; sign in again"
        }
    }
}
