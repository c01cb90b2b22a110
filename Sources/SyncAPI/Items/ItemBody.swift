/// The canonical JSON of a stored item: `id`, the schema's fields in order, server fields, `modified` last.
public enum ItemBody {
    public static func make(
        id: String, content: [(key: String, value: JSONValue)], serverFields: [(key: String, value: JSONValue)], modifiedMs: Int64
    ) -> String {
        var members: [(key: String, value: JSONValue)] = [("id", .string(id))]
        members += content
        members += serverFields
        members.append(("modified", .string(Timestamp.format(epochMilliseconds: modifiedMs))))
        return JSONWriter.encode(.object(members))
    }

    /// The members of a stored body (empty when it is not an object, which the server never writes).
    static func members(of body: String?) -> [(key: String, value: JSONValue)] {
        guard let body, case .object(let members)? = try? JSONParser.parse(body) else { return [] }
        return members
    }

    /// The client-controlled part of stored members (no `id`, no server-set fields), to compare with a new PUT.
    static func content(of members: [(key: String, value: JSONValue)]) -> JSONValue {
        .object(members.filter { $0.key != "id" && !ItemSchema.serverSetFields.contains($0.key) })
    }

    /// The client-controlled part of a stored body.
    public static func content(of body: String) -> JSONValue? {
        let members = members(of: body)
        return members.isEmpty ? nil : content(of: members)
    }

    /// Writes `body` with extra members appended (a parent's children, its `nomore`).
    static func write(_ body: String, appending extra: (inout JSONWriter) -> Void, into writer: inout JSONWriter) {
        guard body.utf8.last == UInt8(ascii: "}") else {
            writer.raw(body)
            return
        }
        writer.raw(bytes: body.utf8.dropLast())
        extra(&writer)
        writer.raw("}")
    }
}
