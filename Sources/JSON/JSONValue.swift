/// A JSON value as `JSON.parse` builds it, and as `JSON.stringify` writes it back.
///
/// Objects keep their members in order; a repeated key replaces the earlier value in its place, as JavaScript's
/// `JSON.parse` does. Numbers are doubles, as in JavaScript.
public enum JSONValue: Hashable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([JSONMember])

    /// The member `key` of an object, nil when absent or when this is not an object.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.key == key }?.value
    }

    /// The JSON type's name, for errors: `null`, `a boolean`, `a number`, `a string`, `an array`, `an object`.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// One `"key": value` of a JSON object.
public struct JSONMember: Hashable, Sendable {
    public var key: String
    public var value: JSONValue

    public init(_ key: String, _ value: JSONValue) {
        self.key = key
        self.value = value
    }
}

// MARK: Parsing

extension JSONValue {
    /// The limits the parser keeps, so that no input can make it use much memory or stack.
    public struct Limits: Hashable, Sendable {
        /// The longest text read, in bytes.
        public var maximumBytes = 1 << 20
        /// The deepest nesting of arrays and objects.
        public var maximumDepth = 32

        public init() {}
    }

    /// Parses JSON text (RFC 8259) strictly as `JSON.parse` does: one value, whitespace around it, nothing else.
    /// Invalid UTF-8, a byte-order mark, raw control characters in strings, and text past `limits` are refused;
    /// a `\u` escape of a lone surrogate becomes U+FFFD (Swift strings hold only scalars).
    public init(parsing bytes: [UInt8], limits: Limits = Limits()) throws(JSONError) {
        guard bytes.count <= limits.maximumBytes else {
            throw .tooLarge(bytes: bytes.count, limit: limits.maximumBytes)
        }
        var parser = JSONParser(bytes: bytes, maximumDepth: limits.maximumDepth)
        self = try parser.document()
    }
}

/// A recursive-descent reader over UTF-8 bytes; every failure names the byte offset and what was expected there.
private struct JSONParser {
    let bytes: [UInt8]
    let maximumDepth: Int
    var offset = 0
    var depth = 0

    init(bytes: [UInt8], maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    mutating func document() throws(JSONError) -> JSONValue {
        skipWhitespace()
        let value = try value()
        skipWhitespace()
        guard offset == bytes.count else { throw fail("the end of the text") }
        return value
    }

    private func fail(_ expected: String) -> JSONError {
        .malformed(offset: offset, expected: expected)
    }

    private var current: UInt8? { offset < bytes.count ? bytes[offset] : nil }

    private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { offset += 1 }
    }

    private mutating func expect(_ literal: StaticString, _ value: JSONValue) throws(JSONError) -> JSONValue {
        let text = literal.withUTF8Buffer { Array($0) }
        guard bytes.count - offset >= text.count, Array(bytes[offset..<offset + text.count]) == text else {
            throw fail("\"\(literal)\"")
        }
        offset += text.count
        return value
    }

    private mutating func value() throws(JSONError) -> JSONValue {
        // NUL never starts a value, so it stands for the end of the text here.
        switch current ?? 0 {
        case UInt8(ascii: "{"): return try nested { (parser) throws(JSONError) in try parser.object() }
        case UInt8(ascii: "["): return try nested { (parser) throws(JSONError) in try parser.array() }
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try expect("true", .bool(true))
        case UInt8(ascii: "f"): return try expect("false", .bool(false))
        case UInt8(ascii: "n"): return try expect("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
        default: throw fail("a value")
        }
    }

    private mutating func nested(_ body: (inout JSONParser) throws(JSONError) -> JSONValue) throws(JSONError)
        -> JSONValue
    {
        guard depth < maximumDepth else { throw fail("at most \(maximumDepth) nested arrays and objects") }
        depth += 1
        defer { depth -= 1 }
        return try body(&self)
    }

    private mutating func object() throws(JSONError) -> JSONValue {
        offset += 1  // {
        var members: [JSONMember] = []
        var index: [String: Int] = [:]
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            offset += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw fail("a member name") }
            let key = try string()
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw fail("\":\"") }
            offset += 1
            skipWhitespace()
            let value = try value()
            if let existing = index[key] {
                members[existing].value = value
            } else {
                index[key] = members.count
                members.append(JSONMember(key, value))
            }
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): offset += 1
            case UInt8(ascii: "}"):
                offset += 1
                return .object(members)
            default: throw fail("\",\" or \"}\"")
            }
        }
    }

    private mutating func array() throws(JSONError) -> JSONValue {
        offset += 1  // [
        var elements: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            offset += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try value())
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): offset += 1
            case UInt8(ascii: "]"):
                offset += 1
                return .array(elements)
            default: throw fail("\",\" or \"]\"")
            }
        }
    }

    private mutating func number() throws(JSONError) -> Double {
        let start = offset
        if current == UInt8(ascii: "-") { offset += 1 }
        switch current ?? 0 {
        case UInt8(ascii: "0"): offset += 1
        case UInt8(ascii: "1")...UInt8(ascii: "9"): skipDigits()
        default: throw fail("a digit")
        }
        if current == UInt8(ascii: ".") {
            offset += 1
            guard let digit = current, isDigit(digit) else { throw fail("a digit after \".\"") }
            skipDigits()
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            offset += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { offset += 1 }
            guard let digit = current, isDigit(digit) else { throw fail("a digit in the exponent") }
            skipDigits()
        }
        // The grammar above admits only text Double's parser reads; overflow gives ±infinity, as in JavaScript.
        guard let value = Double(String(decoding: bytes[start..<offset], as: UTF8.self)) else {
            throw fail("a number")
        }
        return value
    }

    private func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    private mutating func skipDigits() {
        while let byte = current, isDigit(byte) { offset += 1 }
    }

    private mutating func string() throws(JSONError) -> String {
        offset += 1  // "
        var scalars = String.UnicodeScalarView()
        var pendingHighSurrogate: UInt32? = nil
        func flushSurrogate() {
            if pendingHighSurrogate != nil { scalars.append("\u{FFFD}") }
            pendingHighSurrogate = nil
        }
        while true {
            guard let byte = current else { throw fail("the closing \"\\\"\"") }
            switch byte {
            case UInt8(ascii: "\""):
                offset += 1
                flushSurrogate()
                return String(scalars)
            case UInt8(ascii: "\\"):
                offset += 1
                guard let escape = current else { throw fail("an escape") }
                offset += 1
                if escape == UInt8(ascii: "u") {
                    let unit = try hexQuad()
                    if (0xD800...0xDBFF).contains(unit) {
                        flushSurrogate()
                        pendingHighSurrogate = unit
                    } else if (0xDC00...0xDFFF).contains(unit) {
                        if let high = pendingHighSurrogate {
                            let value = 0x10000 + ((high - 0xD800) << 10) + (unit - 0xDC00)
                            scalars.append(Unicode.Scalar(value)!)
                            pendingHighSurrogate = nil
                        } else {
                            scalars.append("\u{FFFD}")
                        }
                    } else {
                        flushSurrogate()
                        scalars.append(Unicode.Scalar(unit)!)
                    }
                    continue
                }
                flushSurrogate()
                switch escape {
                case UInt8(ascii: "\""): scalars.append("\"")
                case UInt8(ascii: "\\"): scalars.append("\\")
                case UInt8(ascii: "/"): scalars.append("/")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                default:
                    offset -= 1
                    throw fail("one of \" \\ / b f n r t u after \"\\\"")
                }
            case 0x00..<0x20:
                throw fail("no control character inside a string")
            case 0x00..<0x80:
                flushSurrogate()
                scalars.append(Unicode.Scalar(byte))
                offset += 1
            default:
                flushSurrogate()
                scalars.append(try multiByteScalar())
            }
        }
    }

    /// Four hexadecimal digits after `\u`.
    private mutating func hexQuad() throws(JSONError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = current else { throw fail("four hexadecimal digits after \"\\u\"") }
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw fail("four hexadecimal digits after \"\\u\"")
            }
            value = value << 4 | digit
            offset += 1
        }
        return value
    }

    /// One UTF-8 sequence of two to four bytes, in its shortest form and outside the surrogates (RFC 3629 §4).
    private mutating func multiByteScalar() throws(JSONError) -> Unicode.Scalar {
        let lead = bytes[offset]
        let (length, minimum, initial): (Int, UInt32, UInt32) =
            switch lead {
            case 0xC2...0xDF: (2, 0x80, UInt32(lead & 0x1F))
            case 0xE0...0xEF: (3, 0x800, UInt32(lead & 0x0F))
            case 0xF0...0xF4: (4, 0x10000, UInt32(lead & 0x07))
            default: (0, 0, 0)
            }
        guard length > 0, bytes.count - offset >= length else { throw fail("valid UTF-8") }
        var value = initial
        for index in 1..<length {
            let byte = bytes[offset + index]
            guard byte & 0xC0 == 0x80 else { throw fail("valid UTF-8") }
            value = value << 6 | UInt32(byte & 0x3F)
        }
        guard value >= minimum, value <= 0x10FFFF, let scalar = Unicode.Scalar(value) else {
            throw fail("valid UTF-8")
        }
        offset += length
        return scalar
    }
}
