/// How `JSON.stringify` lays the text out: on one line, or indented by two spaces (`JSON.stringify(value, null, 2)`).
public enum JSONLayout: Hashable, Sendable {
    case compact
    case pretty
}

extension JSONValue {
    /// The text `JSON.stringify` writes for this value: members in order, `"` `\` and control characters escaped
    /// (`\b \f \n \r \t`, else `\u00XX`), everything else as UTF-8, integral numbers without a fraction.
    public func serialized(_ layout: JSONLayout = .compact) -> [UInt8] {
        var output: [UInt8] = []
        write(into: &output, layout: layout, indent: 0)
        return output
    }

    private func write(into output: inout [UInt8], layout: JSONLayout, indent: Int) {
        switch self {
        case .null: output += Array("null".utf8)
        case .bool(let value): output += Array((value ? "true" : "false").utf8)
        case .number(let value): output += Array(Self.numberText(value).utf8)
        case .string(let text): Self.writeString(text, into: &output)
        case .array(let elements):
            writeContainer(
                open: UInt8(ascii: "["), close: UInt8(ascii: "]"), count: elements.count, into: &output,
                layout: layout, indent: indent
            ) { output, index in
                elements[index].write(into: &output, layout: layout, indent: indent + 1)
            }
        case .object(let members):
            writeContainer(
                open: UInt8(ascii: "{"), close: UInt8(ascii: "}"), count: members.count, into: &output,
                layout: layout, indent: indent
            ) { output, index in
                Self.writeString(members[index].key, into: &output)
                output.append(UInt8(ascii: ":"))
                if layout == .pretty { output.append(UInt8(ascii: " ")) }
                members[index].value.write(into: &output, layout: layout, indent: indent + 1)
            }
        }
    }

    private func writeContainer(
        open: UInt8, close: UInt8, count: Int, into output: inout [UInt8], layout: JSONLayout, indent: Int,
        element: (inout [UInt8], Int) -> Void
    ) {
        output.append(open)
        guard count > 0 else {
            output.append(close)
            return
        }
        for index in 0..<count {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            if layout == .pretty { Self.newline(indent + 1, into: &output) }
            element(&output, index)
        }
        if layout == .pretty { Self.newline(indent, into: &output) }
        output.append(close)
    }

    private static func newline(_ indent: Int, into output: inout [UInt8]) {
        output.append(0x0A)
        output += [UInt8](repeating: UInt8(ascii: " "), count: 2 * indent)
    }

    /// Integral values in the safe-integer range as integers, others in Swift's shortest round-trip form;
    /// non-finite numbers as `null`, as `JSON.stringify` writes them.
    static func numberText(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        if value == value.rounded(), abs(value) < 9_007_199_254_740_992 { return String(Int64(value)) }
        return String(value)
    }

    private static func writeString(_ text: String, into output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): output += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): output += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x08: output += [UInt8(ascii: "\\"), UInt8(ascii: "b")]
            case 0x0C: output += [UInt8(ascii: "\\"), UInt8(ascii: "f")]
            case 0x0A: output += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: output += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: output += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0x00..<0x20:
                let digits = Array("0123456789abcdef".utf8)
                output += Array("\\u00".utf8) + [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]]
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }
}

extension JSONValue {
    /// An object of the members whose value is not nil, in the order given.
    public static func object(omittingNil members: [(String, JSONValue?)]) -> JSONValue {
        .object(members.compactMap { key, value in value.map { JSONMember(key, $0) } })
    }

    /// An object of the members whose value is not nil, keys in ascending order of their UTF-8 bytes (the order
    /// `JSONEncoder`'s `.sortedKeys` gives ASCII keys), so that the same value always gives the same text.
    public static func sortedObject(_ members: [(String, JSONValue?)]) -> JSONValue {
        guard case .object(let present) = object(omittingNil: members) else { return .object([]) }
        return .object(present.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) })
    }

    /// `sortedObject` for members written out as a literal.
    public static func sortedObject(_ members: KeyValuePairs<String, JSONValue?>) -> JSONValue {
        sortedObject(members.map { ($0.key, $0.value) })
    }

    /// An array of strings.
    public static func strings(_ texts: some Sequence<String>) -> JSONValue { .array(texts.map { .string($0) }) }

    /// An integer as a JSON number (exact up to 2^53, which every count, length and version here stays below).
    public static func integer(_ value: some BinaryInteger) -> JSONValue { .number(Double(value)) }
}
