import HTTPTypes
import Hummingbird

/// What the outer responder (`TimeLimitedResponder`) must know of a request before the router runs it.
struct RoutePolicy: Equatable, Sendable {
    /// The route streams: a live change stream (`GET …/changes`) or a media upload read as it arrives (`POST …/media`).
    /// No time limit, and no body read before the handler.
    var streams = false
    /// The most bytes of body read for it before the handler runs (nil: the item routes' limit).
    var bodyLimit: Int?
}

/// The router's routes, resolved from a request's path the way the router resolves it, each with its policy.
///
/// The policy is decided on the route a path resolves to, never on the path's text: `/api/v1/spaces/{spaceId}/media`
/// is an upload exactly as `/api/v1/media` is (a 3 MiB photo to the prefixed path once answered 413, its body read
/// whole under the item routes' limit, issue 53). A route's policy comes from its template with the API's prefix and
/// the space's prefix (`/spaces/{spaceId}`) taken off, so every prefixed route is its unprefixed twin by construction.
struct RoutePolicies: Sendable {
    /// A node of the templates' tree: literal segments first, then one parameter.
    final class Node: Sendable {
        let literals: [Substring: Node]
        let parameter: Node?
        /// `**`: the rest of the path, whatever it holds.
        let rest: [HTTPRequest.Method: RoutePolicy]
        let policies: [HTTPRequest.Method: RoutePolicy]

        init(_ routes: [(segments: ArraySlice<Substring>, method: HTTPRequest.Method, policy: RoutePolicy)]) {
            var literals: [Substring: [(ArraySlice<Substring>, HTTPRequest.Method, RoutePolicy)]] = [:]
            var parameters: [(segments: ArraySlice<Substring>, method: HTTPRequest.Method, policy: RoutePolicy)] = []
            var rest: [HTTPRequest.Method: RoutePolicy] = [:]
            var policies: [HTTPRequest.Method: RoutePolicy] = [:]
            for route in routes {
                guard let first = route.segments.first else {
                    policies[route.method] = route.policy
                    continue
                }
                let tail = route.segments.dropFirst()
                if first == "**" {
                    rest[route.method] = route.policy
                } else if RoutePolicies.isParameter(first) {
                    parameters.append((tail, route.method, route.policy))
                } else {
                    literals[first, default: []].append((tail, route.method, route.policy))
                }
            }
            self.literals = literals.mapValues { Node($0.map { (segments: $0.0, method: $0.1, policy: $0.2) }) }
            self.parameter = parameters.isEmpty ? nil : Node(parameters)
            self.rest = rest
            self.policies = policies
        }

        /// The policy of the route `segments` resolve to for `method`, a literal segment before a parameter.
        func resolve(_ segments: ArraySlice<Substring>, method: HTTPRequest.Method) -> RoutePolicy? {
            guard let first = segments.first else { return policies[method] }
            let tail = segments.dropFirst()
            if let node = literals[first], let policy = node.resolve(tail, method: method) { return policy }
            if let parameter, let policy = parameter.resolve(tail, method: method) { return policy }
            return rest[method]
        }
    }

    let root: Node
    let itemLimit: Int

    /// The policies of `routes` (the router's, once every route is added); `itemLimit`: the item routes' body limit.
    init(routes: [(method: HTTPRequest.Method, path: String)], itemLimit: Int) {
        self.itemLimit = itemLimit
        root = Node(
            routes.map { route in
                let segments = Self.segments(route.path)
                return (segments[...], route.method, Self.policy(method: route.method, template: segments, itemLimit: itemLimit))
            })
    }

    /// The policies of a router's routes.
    init(router: Router<AppRequestContext>, itemLimit: Int) {
        self.init(routes: router.routes.map { ($0.method, $0.path.description) }, itemLimit: itemLimit)
    }

    /// The policy of a request: its route's, or the item routes' when no route takes it (the router answers 404/405).
    func policy(method: HTTPRequest.Method, path: String) -> RoutePolicy {
        root.resolve(Self.segments(path)[...], method: method) ?? RoutePolicy()
    }

    /// A path's segments, however many slashes separate them (as the router reads it).
    static func segments(_ path: String) -> [Substring] {
        Substring(path).split(separator: "/")
    }

    static func isParameter(_ segment: Substring) -> Bool {
        segment.first == "{" || segment.first == ":" || segment == "*"
    }

    /// A route's policy from its template: the API's prefix and a space's prefix taken off, what is left says it.
    static func policy(method: HTTPRequest.Method, template: [Substring], itemLimit: Int) -> RoutePolicy {
        var rest = template[...]
        guard rest.starts(with: ["api", "v1"]) else { return RoutePolicy() }
        rest = rest.dropFirst(2)
        if rest.count >= 2, rest.first == "spaces", isParameter(rest[rest.startIndex + 1]) { rest = rest.dropFirst(2) }
        switch (method, Array(rest)) {
        case (.get, ["changes"]), (.post, ["media"]):
            return RoutePolicy(streams: true)
        case (.post, ["token"]):
            return RoutePolicy(bodyLimit: min(itemLimit, AccountRoutes.tokenBodyMaxBytes))
        case (_, let words) where words.count == 1 && AccountRoutes.words.contains(words[0]):
            return RoutePolicy(bodyLimit: min(itemLimit, AccountRoutes.bodyMaxBytes))
        default:
            return RoutePolicy()
        }
    }
}
