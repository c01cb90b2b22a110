import Hummingbird
import SyncAPI
import Synchronization

/// What a `POST /group` sub-request may reach (protocol §6), decided on the route pattern the router resolved the
/// sub-request to, never on how its URL is spelled: `/api/v1//changes` and `/api/v1/./group` resolve to routes that
/// are not on the list and are refused like their plain spellings.
final class GroupReach: Sendable {
    private let allowed = Mutex<Set<String>>([])
    /// Routes of the API a sub-request never reaches: the group itself, the endless change stream, and media
    /// (binary bodies do not belong in JSON).
    static let refused: Set<String> = [
        "/api/v1/group", "/api/v1/changes", "/api/v1/media", "/api/v1/media/{sha256}", "/api/v1/spaces/{spaceId}/changes",
        "/api/v1/spaces/{spaceId}/media", "/api/v1/spaces/{spaceId}/media/{sha256}",
    ]

    /// Allows the route patterns of `routes` (e.g. `/api/v1/contacts/{id}`).
    func allow(_ patterns: some Sequence<String>) {
        allowed.withLock { $0.formUnion(patterns) }
    }

    func allows(_ pattern: String?) -> Bool {
        guard let pattern else { return false }
        return allowed.withLock { $0.contains(pattern) }
    }
}

/// Refuses a sub-request whose resolved route is not on the group's allow-list with 400 `invalid_subrequest`,
/// before any handler or authentication runs.
struct GroupReachMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext
    let reach: GroupReach

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // No resolved route (nil): the not-found answer follows, as for a direct call.
        if context.isSubrequest, let route = context.endpointPath, !reach.allows(route) {
            throw SyncError(.invalidSubrequest, detail: "A sub-request cannot reach /group, /changes or /media.")
        }
        return try await next(request, context)
    }
}
