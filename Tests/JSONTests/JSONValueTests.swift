import JSON
import Testing

/// The JSON reader against RFC 8259's grammar and `JSON.parse`'s choices, and the writer against `JSON.stringify`.
struct JSONValueTests {
    static let accepted: [(text: String, value: JSONValue)] = [
        ("0", .number(0)),
        (" -12.5e1 ", .number(-125)),
        ("1E+2", .number(100)),
        ("true", .bool(true)),
        ("null", .null),
        (#""a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00""#, .string("a\"\\/\u{08}\u{0C}\n\r\té😀")),
        (#""\ud800x""#, .string("\u{FFFD}x")),
        (#""\udc00""#, .string("\u{FFFD}")),
        ("\"é\"", .string("é")),
        (#"[1,[],{}]"#, .array([.number(1), .array([]), .object([])])),
        // A repeated key keeps its first place and its last value, as JSON.parse.
        (#"{"a":1,"b":2,"a":3}"#, .object([JSONMember("a", .number(3)), JSONMember("b", .number(2))])),
    ]

    @Test(arguments: accepted)
    func parses(text: String, value: JSONValue) throws {
        #expect(try JSONValue(parsing: Array(text.utf8)) == value)
    }

    static let refused: [(bytes: [UInt8], offset: Int)] = [
        (Array("01".utf8), 1),
        (Array("1.".utf8), 2),
        (Array("-".utf8), 1),
        (Array("+1".utf8), 0),
        (Array("[1,]".utf8), 3),
        (Array("{\"a\" 1}".utf8), 5),
        (Array("\"a".utf8), 2),
        (Array("\"\t\"".utf8), 1),
        (Array(#""\x""#.utf8), 2),
        (Array(#""\u12""#.utf8), 5),
        (Array("tru".utf8), 0),
        ([0x22, 0xC0, 0x80, 0x22], 1),  // overlong NUL
        ([0x22, 0xED, 0xA0, 0x80, 0x22], 1),  // an encoded surrogate
        ([0x22, 0xF4, 0x90, 0x80, 0x80, 0x22], 1),  // above U+10FFFF
        ([0x22, 0xE9, 0x22], 1),  // truncated sequence
    ]

    @Test(arguments: refused)
    func refuses(bytes: [UInt8], offset: Int) {
        #expect {
            try JSONValue(parsing: bytes)
        } throws: { error in
            guard case .malformed(let at, _) = error as? JSONError else { return false }
            return at == offset
        }
    }

    @Test func nestingIsBounded() throws {
        let deep = String(repeating: "[", count: 33) + String(repeating: "]", count: 33)
        #expect(throws: JSONError.malformed(offset: 32, expected: "at most 32 nested arrays and objects")) {
            try JSONValue(parsing: Array(deep.utf8))
        }
        let fine = String(repeating: "[", count: 32) + String(repeating: "]", count: 32)
        _ = try JSONValue(parsing: Array(fine.utf8))
    }

    @Test func writesAsStringify() {
        let value = JSONValue.object([
            JSONMember("s", .string("q\"\\\n\u{01}é/")), JSONMember("n", .number(-7)), JSONMember("f", .number(0.5)),
            JSONMember("a", .array([.bool(true), .null])), JSONMember("e", .object([])), JSONMember("l", .array([])),
        ])
        #expect(
            String(decoding: value.serialized(), as: UTF8.self)
                == #"{"s":"q\"\\\n\u0001é/","n":-7,"f":0.5,"a":[true,null],"e":{},"l":[]}"#)
        #expect(
            String(decoding: value.serialized(.pretty), as: UTF8.self) == """
                {
                  "s": "q\\"\\\\\\n\\u0001é/",
                  "n": -7,
                  "f": 0.5,
                  "a": [
                    true,
                    null
                  ],
                  "e": {},
                  "l": []
                }
                """)
    }

    @Test func writtenTextReadsBack() throws {
        let value = JSONValue.object([
            JSONMember("k", .array([.string("\u{7F}\u{0}x😀"), .number(65536), .number(-1e300)]))
        ])
        #expect(try JSONValue(parsing: value.serialized()) == value)
        #expect(try JSONValue(parsing: value.serialized(.pretty)) == value)
    }
}
