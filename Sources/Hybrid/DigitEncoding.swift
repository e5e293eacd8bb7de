/// Why a string of digits is not a valid digit encoding.
public enum DigitEncodingError: Error, Hashable, Sendable {
    /// The byte at this UTF-8 offset is not an ASCII digit `0`–`9`.
    case invalidCharacter(offset: Int)
    /// The digits after the last full 17-digit chunk number this many; only 0, 3, 5, 8, 10, 13 and 15 occur.
    case invalidRemainderLength(Int)
    /// The chunk starting at this offset has a value that does not fit in the bytes it stands for
    /// (2⁵⁶ or more for a full chunk, 2⁸ⁿ or more for a partial chunk of n bytes).
    case chunkOutOfRange(offset: Int)
}

extension DigitEncodingError: CustomStringConvertible {
    /// A one-line explanation for logs and error messages.
    public var description: String {
        switch self {
        case .invalidCharacter(let offset): "character at offset \(offset) is not a decimal digit"
        case .invalidRemainderLength(let count): "\(count) digits after the last 17-digit chunk encode no byte count"
        case .chunkOutOfRange(let offset): "digits at offset \(offset) are too large for the bytes they stand for"
        }
    }
}

/// The decimal form the hybrid QR code uses for its CBOR payload, so the QR code can use its compact
/// numeric mode (https://www.imperialviolet.org/2021/08/26/qrencoding.html).
///
/// Bytes go in 7-byte chunks, each read as a little-endian integer and printed as 17 zero-padded digits.
/// A final partial chunk of n = 1…6 bytes is read the same way and padded to 3, 5, 8, 10, 13 or 15 digits.
/// Follows Chromium `device/fido/cable/v2_handshake.cc` (`qr::BytesToDigits`, `qr::DigitsToBytes`).
public enum DigitEncoding {
    /// Bytes per full chunk (`kChunkSize`).
    static let chunkSize = 7
    /// Digits per full chunk (`kChunkDigits`).
    static let chunkDigits = 17
    /// Digits for a partial chunk of n bytes, indexed by n (Chromium's `kPartialChunkDigits = 0x0fda8530`).
    static let partialChunkDigits = [0, 3, 5, 8, 10, 13, 15]

    /// What follows `prefix` in `url`, when `url` starts with it (ASCII letters compared without regard to case, as
    /// Chromium's `qr::Parse` compares `FIDO:/`); nil otherwise. QR scanners may hand over the URL in either case.
    public static func digits(of url: some StringProtocol, afterPrefix prefix: String) -> String? {
        let utf8 = url.utf8
        let prefix = prefix.utf8
        guard utf8.count >= prefix.count,
            zip(utf8.prefix(prefix.count), prefix).allSatisfy({ asciiLowercase($0) == asciiLowercase($1) })
        else { return nil }
        return String(decoding: utf8.dropFirst(prefix.count), as: UTF8.self)
    }

    private static func asciiLowercase(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
    }

    /// The digits for `bytes`; the empty input gives the empty string.
    public static func encode(_ bytes: [UInt8]) -> String {
        let partialWidth = partialChunkDigits[bytes.count % chunkSize]
        let length = bytes.count / chunkSize * chunkDigits + partialWidth
        let digits = [UInt8](unsafeUninitializedCapacity: length) { output, initialized in
            var start = 0
            var end = 0
            while start < bytes.count {
                let count = min(chunkSize, bytes.count - start)
                var value: UInt64 = 0
                for index in 0..<count {
                    value |= UInt64(bytes[start + index]) << (8 * UInt64(index))
                }
                // Zero-padded to the chunk's width, written from the last digit back.
                end += count == chunkSize ? chunkDigits : partialWidth
                var position = end
                while position > initialized {
                    position -= 1
                    output[position] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: value % 10)
                    value /= 10
                }
                initialized = end
                start += count
            }
        }
        return String(decoding: digits, as: UTF8.self)
    }

    /// The bytes that `digits` encodes.
    ///
    /// Only ASCII digits are accepted (no signs, spaces or other scripts' digits). Each full chunk must
    /// be below 2⁵⁶; the remainder must be 3, 5, 8, 10, 13 or 15 digits long and below 2⁸ⁿ for its n bytes.
    public static func decode(_ digits: some StringProtocol) throws(DigitEncodingError) -> [UInt8] {
        let result = digits.utf8.withContiguousStorageIfAvailable { buffer in
            Result { () throws(DigitEncodingError) in try decode(utf8: buffer) }
        }
        if let result { return try result.get() }
        let copy = Array(digits.utf8)
        return try copy.withUnsafeBufferPointer { buffer in
            Result { () throws(DigitEncodingError) in try decode(utf8: buffer) }
        }.get()
    }

    private static func decode(utf8: UnsafeBufferPointer<UInt8>) throws(DigitEncodingError) -> [UInt8] {
        for offset in 0..<utf8.count where utf8[offset] &- UInt8(ascii: "0") > 9 {
            throw .invalidCharacter(offset: offset)
        }
        let remainder = utf8.count % chunkDigits
        guard let remainderBytes = partialChunkDigits.firstIndex(of: remainder) else {
            throw .invalidRemainderLength(remainder)
        }
        var output: [UInt8] = []
        output.reserveCapacity(utf8.count / chunkDigits * chunkSize + remainderBytes)
        var start = 0
        while start < utf8.count {
            let digitCount = min(chunkDigits, utf8.count - start)
            let byteCount = digitCount == chunkDigits ? chunkSize : remainderBytes
            // At most 17 digits: below 10¹⁷ < 2⁶⁴, so this cannot overflow.
            var value: UInt64 = 0
            for index in start..<start + digitCount {
                value = value * 10 + UInt64(utf8[index] &- UInt8(ascii: "0"))
            }
            guard value >> (8 * UInt64(byteCount)) == 0 else { throw .chunkOutOfRange(offset: start) }
            for index in 0..<byteCount {
                output.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(index))))
            }
            start += digitCount
        }
        return output
    }
}
