import Foundation
import HTTPTypes
import Hummingbird
import SyncAPI
import TestSupport
import Testing

@testable import Handlers

/// Uploads, streams and body limits are decided on the route a path resolves to (issue 53): every route under
/// `/api/v1/spaces/{spaceId}` gets exactly what its unprefixed twin gets, for the default model and for one with
/// every collection kind.
@Suite("Route policies", .sharingTheMachine)
struct RoutePoliciesTests {
    /// A concrete path for a template: each parameter a value.
    static func concrete(_ template: String) -> String {
        "/" + RoutePolicies.segments(template).map { RoutePolicies.isParameter($0) ? "x1" : String($0) }.joined(separator: "/")
    }

    static func model(_ name: String) throws -> DataModel {
        name == "family"
            ? Collections.model
            : try DataModel(contentsOf: DataModelPaths.root.appendingPathComponent("models/examples/\(name).json").path)
    }

    @Test("every prefixed route has its twin's policy; uploads and change streams stream on both", arguments: ["family", "inspections"])
    func twins(model name: String) async throws {
        let model = try Self.model(name)
        try await Backend.sqlite.withStore { store in
            var configuration = AppConfiguration()
            configuration.model = model
            let router = buildRouter(
                roles: StoreRoles(store), producers: AnswerProducers(), timers: testTimers, media: store as? any MediaStore,
                configuration: configuration)
            let itemLimit = configuration.bodyMaxBytes
            let policies = RoutePolicies(router: router, itemLimit: itemLimit)
            let routes = router.routes.map { ($0.method, $0.path.description) }
            var prefixed = 0
            for (method, template) in routes {
                let segments = RoutePolicies.segments(template)
                guard segments.count > 4, segments[2] == "spaces", RoutePolicies.isParameter(segments[3]) else { continue }
                let twin = "/api/v1/" + segments.dropFirst(4).joined(separator: "/")
                // Space routes of their own (members, invitations) have no unprefixed twin.
                guard routes.contains(where: { $0.0 == method && $0.1 == twin }) else { continue }
                prefixed += 1
                let path = Self.concrete(template)
                #expect(
                    policies.policy(method: method, path: path) == policies.policy(method: method, path: Self.concrete(twin)),
                    "\(method) \(template)")
                // However many slashes separate the segments, as the router reads it.
                #expect(
                    policies.policy(method: method, path: path.replacingOccurrences(of: "/", with: "//"))
                        == policies.policy(method: method, path: path))
            }
            #expect(prefixed > 10, "\(prefixed) prefixed routes walked")
            for base in ["/api/v1", "/api/v1/spaces/s1"] {
                #expect(policies.policy(method: .post, path: base + "/media").streams, "\(base)/media")
                #expect(policies.policy(method: .get, path: base + "/changes").streams, "\(base)/changes")
                #expect(!policies.policy(method: .get, path: base + "/media").streams)
            }
            #expect(policies.policy(method: .post, path: "/api/v1/login").bodyLimit == AccountRoutes.bodyMaxBytes)
            #expect(policies.policy(method: .post, path: "/api/v1/token").bodyLimit == AccountRoutes.tokenBodyMaxBytes)
            #expect(policies.policy(method: .post, path: "/api/v1/group").bodyLimit == nil)
            // A path no route takes gets the item routes' limit (the router answers it 404).
            #expect(policies.policy(method: .put, path: "/api/v1/nothing/here") == RoutePolicy())
        }
    }

    @Test("a 3 MiB photo uploads to a space's prefixed media path as to the unprefixed one", arguments: Backend.allCases)
    func prefixedUpload(backend: Backend) async throws {
        try await TestApp.run(backend) { client in
            let api = try await APIClient.signedUp(client)
            let spaces = try await api.call(.get, "/api/v1/spaces")
            guard case .array(let list)? = spaces.json?["spaces"] ?? spaces.json, let space = list.first?["id"]?.stringValue else {
                throw TestFailure("no space: \(spaces.body)")
            }
            var photo = [UInt8](repeating: 0, count: 3 << 20)
            for index in stride(from: 4096, to: photo.count, by: 4096) { photo[index] = UInt8(truncatingIfNeeded: index >> 12) }
            photo.replaceSubrange(0..<4, with: [0xFF, 0xD8, 0xFF, 0xE0])  // a JPEG's signature
            for path in ["/api/v1/spaces/\(space)/media", "/api/v1/media"] {
                let answer = try await api.call(.post, path, bytes: photo, headers: [.contentType: "image/jpeg"])
                #expect(answer.status == .created || answer.status == .ok, "\(path): \(answer.status) \(answer.body)")
            }
        }
    }
}
