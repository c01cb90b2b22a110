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

    /// The client-controlled part of stored members: the schema's fields, in their stored (declaration) order, to
    /// compare with a new PUT or to patch.
    static func content(of members: [(key: String, value: JSONValue)], _ schema: ItemSchema) -> JSONValue {
        let declared = Set(schema.fields.map(\.name))
        return .object(members.filter { declared.contains($0.key) })
    }

    /// The stored members a schema neither declares nor sets itself: fields of a newer model (a rolling deploy), kept
    /// as stored by a PATCH through an instance that does not know them.
    static func undeclared(_ members: [(key: String, value: JSONValue)], _ schema: ItemSchema) -> [(key: String, value: JSONValue)] {
        let declared = Set(schema.fields.map(\.name))
        return members.filter {
            $0.key != "id" && $0.key != "modified" && !declared.contains($0.key) && !schema.serverSetFields.contains($0.key)
        }
    }

    /// A stored body in the shape of a changed model (protocol §12, evolution): `id`, then the schema's fields in
    /// order (a stored value, else the field's default or null), then the other members as stored (server fields,
    /// `modified` last) without the `removed` fields. Nil when `body` is not an object.
    static func reshaped(_ body: String, _ schema: ItemSchema, removed: Set<String>) -> String? {
        guard case .object(let members)? = try? JSONParser.parse(body) else { return nil }
        let declared = Set(schema.fields.map(\.name))
        var out: [(key: String, value: JSONValue)] = members.filter { $0.key == "id" }
        for field in schema.fields { out.append((field.name, members.first { $0.key == field.name }?.value ?? field.defaultValue)) }
        out += members.filter { $0.key != "id" && !declared.contains($0.key) && !removed.contains($0.key) }
        return JSONWriter.encode(.object(out))
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
