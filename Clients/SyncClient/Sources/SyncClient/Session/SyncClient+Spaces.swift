import Foundation

/// A space of the account (protocol §15), as `GET /spaces` lists it.
public struct SpaceInfo: Codable, Sendable, Equatable, Identifiable {
    public let id: String
    public let name: String
    /// `owner`, `member` or `reader`.
    public let role: String
    /// Whether the unprefixed paths (a client with no `configuration.space`) address it.
    public let home: Bool?
}

/// A member of a space.
public struct SpaceMember: Codable, Sendable, Equatable {
    public let accountId: String
    public let displayName: String
    public let role: String
}

/// A new invitation: its code is shown once (the server keeps only its hash).
public struct SpaceInvitation: Codable, Sendable, Equatable {
    public let code: String
    public let role: String
    public let expiresAt: String
    public let uses: Int
}

/// Spaces: an account belongs to several, with a role in each; each client's replica holds one
/// (`configuration.space`, nil for the home space).
extension SyncClient {
    /// The account's spaces, in the order it joined them.
    public func spaces() async throws -> [SpaceInfo] {
        try await decoded(try await call("GET", "/spaces"), as: [SpaceInfo].self)
    }

    /// A new space the account owns.
    public func createSpace(name: String) async throws -> SpaceInfo {
        let space = try await decoded(
            try await call("POST", "/spaces", body: .object(["name": .string(name)])), as: SpaceInfo.self, expecting: 201)
        try adoptHomeIfNone(space)
        return space
    }

    /// Joins the space of an invitation code (a member already in it keeps its role). An unknown, used-up or expired
    /// code is `.server(status: 404, code: .notFound, …)`; too many failed codes from this address, `.throttled`.
    public func acceptInvitation(code: String) async throws -> SpaceInfo {
        let space = try await decoded(
            try await call("POST", "/invitations/accept", body: .object(["code": .string(code)])), as: SpaceInfo.self)
        try adoptHomeIfNone(space)
        return space
    }

    /// An invitation to this client's space (owners): `role` for the account that accepts it, `uses` accounts at most,
    /// valid `expiresIn` seconds (default 7 days).
    public func invite(role: String, uses: Int = 1, expiresIn: Int? = nil) async throws -> SpaceInvitation {
        var body: [String: JSONValue] = ["role": .string(role), "uses": .number(JSONNumber(Int64(uses)))]
        if let expiresIn { body["expiresIn"] = .number(JSONNumber(Int64(expiresIn))) }
        return try await decoded(try await call("POST", try spacePath("/invitations"), body: .object(body)), as: SpaceInvitation.self, expecting: 201)
    }

    /// The members of this client's space.
    public func members() async throws -> [SpaceMember] {
        try await decoded(try await call("GET", try spacePath("/memberships")), as: [SpaceMember].self)
    }

    /// A client of another space of the signed-in account, with its own replica file (the session is shared through
    /// the token store). Switching spaces is using the other client.
    public func client(forSpace space: String, replicaPath: String) throws -> SyncClient {
        var configuration = self.configuration
        configuration.space = space
        configuration.replicaPath = replicaPath
        return try SyncClient(configuration: configuration)
    }

    /// `/spaces/{id}` + `path` for this client's space (its home space's id when `configuration.space` is nil).
    func spacePath(_ path: String) throws -> String {
        guard let space = configuration.space ?? currentSession?.familyID, !space.isEmpty else { throw SyncClientError.notSignedIn }
        return "/spaces/\(space.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? space)" + path
    }

    /// A sync that failed with 404 in a space-bound client: when the account no longer lists the space (removed, or
    /// the space is gone), the replica's data is erased and the error becomes `.spaceRemoved`; any other error as it is.
    func spaceRemoval(_ error: any Error) async -> any Error {
        guard let space = configuration.space, case .server(404, _, _)? = error as? SyncClientError else { return error }
        guard let listed = try? await spaces(), !listed.contains(where: { $0.id == space }) else { return error }
        // Inside the sync's flight, which `reset()` would wait for.
        do { try await eraseData() } catch { return error }
        return SyncClientError.spaceRemoved(space)
    }

    private func decoded<T: Decodable>(_ answer: HTTPAnswer, as type: T.Type, expecting status: Int = 200) async throws -> T {
        guard answer.status == status else { throw SyncClientError.from(answer) }
        do {
            return try JSONDecoder().decode(T.self, from: answer.body)
        } catch {
            throw SyncClientError.server(status: answer.status, code: .invalidAnswer, detail: "\(error)")
        }
    }
}
