import TestSupport
import Testing

@testable import Handlers

/// A sub-request's url is resolved before its route is chosen; a url with nothing to resolve is kept as it is.
@Suite("Group sub-request urls", .sharingTheMachine)
struct GroupURLTests {
    @Test(
        "dot segments resolve, empty segments drop, a resolved url is kept",
        arguments: [
            ("/api/v1/ctcsync?date=a/./b", "/api/v1/ctcsync?date=a/./b"), ("/api/v1/x/", "/api/v1/x/"), ("/", "/"),
            ("/api/v1//x", "/api/v1/x"), ("/api/v1/./x", "/api/v1/x"), ("/api/v1/a/../x?y=1", "/api/v1/x?y=1"),
            ("/api/v1/.well-known", "/api/v1/.well-known"), ("api/v1/x", "/api/v1/x"), ("/api/v1/x/.", "/api/v1/x"),
            ("/api/v1/x?y=/../z", "/api/v1/x?y=/../z"), ("/api/v1/../../x", "/x"), ("/api/../../x", nil), ("", "/"), ("?a=1", "/?a=1"),
        ] as [(String, String?)])
    func resolves(url: String, expected: String?) {
        #expect(GroupRoutes.resolvingDotSegments(url) == expected)
    }
}
