import JSON

/// Reading association files: the strict RFC 8259 reader of `JSON`, with a size limit, and members read
/// with the JSON path that errors name.
enum AssociationJSON {
    /// Parses `bytes` as one JSON value, at most `maximumBytes` long and 32 levels deep.
    static func parse(_ bytes: [UInt8], maximumBytes: Int, what: String) throws(AssociationFileError) -> JSONValue {
        guard bytes.count <= maximumBytes else {
            throw AssociationFileError(
                .tooLarge, "the \(what) is \(bytes.count) bytes, above the limit of \(maximumBytes) bytes")
        }
        var limits = JSONValue.Limits()
        limits.maximumBytes = maximumBytes
        limits.maximumDepth = 32
        do {
            return try JSONValue(parsing: bytes, limits: limits)
        } catch {
            throw AssociationFileError(.malformedJSON, "the \(what) is not valid JSON (\(error))")
        }
    }

    /// The path of `key` inside `path`: `a.b` for names made of letters, digits and `_`, `a["?"]` for others.
    static func path(_ path: String, _ key: String) -> String {
        let plain =
            !key.isEmpty
            && key.utf8.allSatisfy { $0.isASCIIAlphanumeric || $0 == UInt8(ascii: "_") }
        if plain { return path.isEmpty ? key : "\(path).\(key)" }
        var quoted = ""
        for character in key.printable {
            if character == "\"" || character == "\\" { quoted.append("\\") }
            quoted.append(character)
        }
        return "\(path)[\"\(quoted)\"]"
    }

    static func path(_ path: String, _ index: Int) -> String { "\(path)[\(index)]" }

    static func name(_ path: String) -> String { path.isEmpty ? "the document" : path }

    static func wrongType(_ path: String, _ value: JSONValue, expected: String) -> AssociationFileError {
        AssociationFileError(.wrongType, path: path, "\(name(path)) must be \(expected), not \(value.typeName)")
    }
}

/// The members of one JSON object with the path errors name. Unknown members are ignored; a member that is present
/// with the wrong type is an error (`null` included: the formats never use it).
struct JSONObject {
    let path: String
    let members: [JSONMember]

    init(_ value: JSONValue, path: String) throws(AssociationFileError) {
        guard case .object(let members) = value else {
            throw AssociationJSON.wrongType(path, value, expected: "an object")
        }
        self.members = members
        self.path = path
    }

    func path(_ key: String) -> String { AssociationJSON.path(path, key) }

    func value(_ key: String) -> JSONValue? { members.first { $0.key == key }?.value }

    func object(_ key: String) throws(AssociationFileError) -> JSONObject? {
        guard let value = value(key) else { return nil }
        return try JSONObject(value, path: path(key))
    }

    func string(_ key: String) throws(AssociationFileError) -> String? {
        guard let value = value(key) else { return nil }
        guard case .string(let text) = value else {
            throw AssociationJSON.wrongType(path(key), value, expected: "a string")
        }
        return text
    }

    func bool(_ key: String) throws(AssociationFileError) -> Bool? {
        guard let value = value(key) else { return nil }
        guard case .bool(let flag) = value else {
            throw AssociationJSON.wrongType(path(key), value, expected: "true or false")
        }
        return flag
    }

    func array(_ key: String) throws(AssociationFileError) -> [JSONValue]? {
        guard let value = value(key) else { return nil }
        guard case .array(let elements) = value else {
            throw AssociationJSON.wrongType(path(key), value, expected: "an array")
        }
        return elements
    }

    /// An array of strings, each element's path named when it is not a string.
    func strings(_ key: String) throws(AssociationFileError) -> [String]? {
        guard let elements = try array(key) else { return nil }
        var result: [String] = []
        for (index, element) in elements.enumerated() {
            guard case .string(let text) = element else {
                throw AssociationJSON.wrongType(
                    AssociationJSON.path(path(key), index), element, expected: "a string")
            }
            result.append(text)
        }
        return result
    }
}
