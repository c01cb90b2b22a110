public enum SyncAPIVersion { public static let string = "0.1.0" }
