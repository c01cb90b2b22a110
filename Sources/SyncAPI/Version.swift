/// The server version, reported by `GET /api/v1/`.
public enum SyncAPIVersion { public static let string = "0.1.0" }
