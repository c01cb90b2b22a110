import Foundation
import GRDB
import Logging

extension SyncClient {
    /// Creates a family and its first account, and signs in (`POST /signup`). The new account is another account than
    /// the replica's: writes still waiting to be pushed refuse it (`unpushedWrites`, checked before any request)
    /// unless `discardingPendingWrites`.
    public func signUp(family: String, username: String, password: String, discardingPendingWrites: Bool = false) async throws {
        if !discardingPendingWrites {
            let pending = try pendingOperations()
            guard pending.isEmpty else { throw SyncClientError.unpushedWrites(pending) }
        }
        try await signIn(
            "/signup", ["family": .string(family), "username": .string(username), "password": .string(password)], expected: 201,
            discardingPendingWrites: discardingPendingWrites)
    }

    /// Signs in to an existing account (`POST /login`). The same account keeps the replica, its unsent and failed
    /// writes. Another account erases the replica's data (another account's data never shows through); while writes
    /// wait to be pushed it is refused with `unpushedWrites` (the new token is revoked, nothing is erased) unless
    /// `discardingPendingWrites`: sign in as the account that made them and push, or discard them.
    public func logIn(username: String, password: String, discardingPendingWrites: Bool = false) async throws {
        try await signIn(
            "/login", ["username": .string(username), "password": .string(password)], expected: 200,
            discardingPendingWrites: discardingPendingWrites)
    }

    private func signIn(_ path: String, _ body: JSONObject, expected: Int, discardingPendingWrites: Bool) async throws {
        let answer = try await signInCall(path, body)
        guard answer.status == expected, let grant = try? JSONDecoder().decode(Grant.self, from: answer.body) else {
            throw SyncClientError.from(answer)
        }
        try await adopt(
            ClientSession(token: grant.token, accountID: grant.accountId, familyID: grant.familyId, expiresAt: grant.expiresAt),
            discardingPendingWrites: discardingPendingWrites)
    }

    /// A sign-in call (`/signup`, `/login`, `/token`), with no token. A throttled one (429) is the server saying "stop
    /// guessing": never retried. A busy one (503) is.
    func signInCall(_ path: String, _ body: JSONObject) async throws -> HTTPAnswer {
        try await configuration.retryPolicy.run(retrying: { $0.isTransient && $0.status != 429 }) {
            let answer = try await self.call("POST", path, body: .object(body), auth: false)
            if answer.status == 503 { throw SyncClientError.from(answer) }
            return answer
        }
    }

    /// Makes a new grant the client's session: the same account keeps the replica, another erases it (refused while
    /// writes wait, unless `discardingPendingWrites`: the grant's token is then revoked).
    func adopt(_ new: ClientSession, discardingPendingWrites: Bool) async throws {
        // After a sync that was running, never before it: its answers must not land in a replica given to another
        // account.
        let unsent = try await flight.exclusive {
            try await self.replica.pool.write { db -> [PendingOperation] in
                // Another account's data never shows through, nor its failed writes; the same account keeps its replica
                // (and its offline writes) across a lost session. Unsent writes are never erased unasked.
                guard try Replica.meta(db, MetaKey.account) != new.accountID else { return [] }
                let pending = try Replica.pending(db)
                if !pending.isEmpty, !discardingPendingWrites { return pending }
                try Replica.eraseData(db)
                try Self.eraseMedia(db, self.mediaStore)
                try Replica.setMeta(db, MetaKey.account, new.accountID)
                return []
            }
        }
        guard unsent.isEmpty else {
            // The grant is not used: its token is revoked (best effort; it expires by itself otherwise).
            let logout = HTTPCall(method: "POST", url: url("/logout"), headers: ["Authorization": "Bearer \(new.token)"])
            _ = try? await deliver(logout, auth: false)
            throw SyncClientError.unpushedWrites(unsent)
        }
        try configuration.tokenStore.save(new)
        session.withLock { $0 = new }
        log.session.info("signed in", metadata: ["account": "\(new.accountID)", "space": "\(new.familyID)"])
        try refreshCounts()
        statusCenter.update {
            $0.signedIn = true
            $0.lastError = nil
            if case .error = $0.state { $0.state = .idle }
        }
        // The server's model and limits, read with the session (a sync reads them anyway if this fails): an operator
        // may have changed either since the last session.
        _ = try? await serverModel(refresh: true)
        _ = try? await limits(refresh: true)
        try? refreshCounts()
        // Live mode asked for before (or ended by a lost session) comes back with the session; writes made offline go.
        resumeLive()
        schedulePush()
    }

    /// Signs out: pushes unsent writes first (unless `discardingPendingWrites`), revokes the token on the server, and
    /// erases the replica's data (the file stays: observers keep working and see empty results). When some writes
    /// cannot be pushed (offline, refused, the session lost) it throws `unpushedWrites` with them and stays signed in.
    /// The failed writes (`failedOperations()`, refused by the server for good) are kept, for the app to show or
    /// export after the logout, and for the same account's next sign-in, unless `erasingFailedWrites`; another
    /// account's sign-in erases them.
    public func logOut(discardingPendingWrites: Bool = false, erasingFailedWrites: Bool = false) async throws {
        if !discardingPendingWrites, try !pendingOperations().isEmpty {
            // Whatever stopped the push (the network, the session, a refusal of the whole push), what counts is the
            // writes it left.
            _ = try? await push()
            let left = try pendingOperations()
            guard left.isEmpty else { throw SyncClientError.unpushedWrites(left) }
        }
        await stopLive()
        await cancelScheduledPush()
        if isSignedIn {
            // Offline: the token is forgotten here; it expires on the server.
            _ = try? await call("POST", "/logout")
        }
        try await signedOut(erasingFailedWrites: erasingFailedWrites)
        log.session.info("signed out")
    }

    /// Forgets the session and erases the replica's data (and its failed writes when asked), after a sync that was
    /// running, never before it: its answers must not land in the erased replica.
    private func signedOut(erasingFailedWrites: Bool) async throws {
        try configuration.tokenStore.clear()
        session.withLock { $0 = nil }
        try await flight.exclusive {
            try await self.replica.pool.write { db in
                try Replica.eraseData(db, keepingFailed: !erasingFailedWrites)
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

    /// Deletes the signed-in account on the server (`DELETE /accounts/{id}`: what app stores require an app to offer),
    /// then forgets the session and erases the replica, its unsent and failed writes included: they belonged to the
    /// account. The owner of a family with other accounts in it is refused (403 `forbidden`), and the last owner of a
    /// shared space (409 `last_owner`): hand the space over first. Nothing is erased when the server refuses.
    public func deleteAccount() async throws {
        guard let current = currentSession else { throw SyncClientError.notSignedIn }
        let id = current.accountID.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? current.accountID
        let answer = try await call("DELETE", "/accounts/\(id)")
        guard answer.status == 204 else { throw SyncClientError.from(answer) }
        await stopLive()
        await cancelScheduledPush()
        try await signedOut(erasingFailedWrites: true)
    }

    /// The token stopped working (logout elsewhere, password change, expiry): the session is forgotten; the replica
    /// stays until the app signs in again (the same account keeps it, another erases it).
    func sessionEnded() {
        log.session.notice("session ended by the server (401): signed out")
        try? configuration.tokenStore.clear()
        session.withLock { $0 = nil }
        statusCenter.update {
            $0.signedIn = false
            $0.state = .error(.notSignedIn)
            $0.lastError = .notSignedIn
        }
    }
}
