/// One sub-request of `POST /group` (protocol §6): many calls in one round trip.
public struct SubRequest: Codable, Sendable, Equatable {
    public var id: String
    public var method: String
    /// A path under `/api/v1/`, with its query.
    public var url: String
    public var headers: [String: String]?
    public var body: JSONValue?

    public init(id: String, method: String, url: String, body: JSONValue? = nil, headers: [String: String] = [:]) {
        self.id = id
        self.method = method
        self.url = url
        self.body = body
        self.headers = headers.isEmpty ? nil : headers
    }
}

/// The body of `POST /group`.
public struct GroupRequest: Codable, Sendable, Equatable {
    public var requests: [SubRequest]
}

/// One answer of a group, in request order: its own status, `ETag` header, and body (null for 204 and 304).
public struct SubResponse: Codable, Sendable, Equatable {
    public var id: String
    public var status: Int
    public var headers: [String: String]?
    public var body: JSONValue?

    public init(id: String, status: Int, headers: [String: String]? = nil, body: JSONValue? = nil) {
        self.id = id
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A header by case-insensitive name.
    public func header(_ name: String) -> String? {
        headers?.first { $0.key.lowercased() == name.lowercased() }?.value
    }
}

/// The answer of `POST /group`.
public struct GroupAnswer: Codable, Sendable, Equatable {
    public var responses: [SubResponse]
}
