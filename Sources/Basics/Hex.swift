extension Array where Element == UInt8 {
    /// Parses hexadecimal text (either case, no separators); `nil` for odd lengths or other characters.
    public init?(hex: some StringProtocol) {
        let digits = Array(hex.utf8)
        guard digits.count.isMultiple(of: 2) else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = Self.nibble(digits[index]), let low = Self.nibble(digits[index + 1]) else {
                return nil
            }
            bytes.append(high << 4 | low)
            index += 2
        }
        self = bytes
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension Sequence where Element == UInt8 {
    /// Lower-case hexadecimal text.
    public var hexString: String { hexText(digits: lowerDigits) }

    /// Upper-case hexadecimal text, as Chromium's `base::HexEncode` writes it.
    public var upperHexString: String { hexText(digits: upperDigits) }

    private func hexText(digits: StaticString) -> String {
        digits.withUTF8Buffer { digits in
            var text: [UInt8] = []
            text.reserveCapacity(underestimatedCount * 2)
            for byte in self {
                text.append(digits[Int(byte >> 4)])
                text.append(digits[Int(byte & 0x0F)])
            }
            return String(decoding: text, as: UTF8.self)
        }
    }
}

extension BinaryInteger {
    /// The value in hexadecimal, zero-padded to `digits`: `26.hexDigits(4) == "001a"`.
    public func hexDigits(_ digits: Int, uppercase: Bool = false) -> String {
        let text = String(self, radix: 16, uppercase: uppercase)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}

private let lowerDigits: StaticString = "0123456789abcdef"
private let upperDigits: StaticString = "0123456789ABCDEF"
