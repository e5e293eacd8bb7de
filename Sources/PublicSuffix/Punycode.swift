/// Punycode (RFC 3492): Unicode labels as the ASCII `xn--` labels DNS and the public suffix list's lookups use.
///
/// The list is written in Unicode (UTF-8), while hosts arrive in their ASCII form, so every Unicode rule is
/// converted once, when the list is loaded. None of the Swift packages this project may depend on does it
/// (Foundation's `URL` hands hosts back as typed; swift-nio, swift-crypto, swift-certificates and
/// async-http-client have no IDNA), and RFC 3492's algorithm is short, so it is written out here.
///
/// Only the bootstring algorithm itself is done: no IDNA mapping (UTS #46 case folding, NFC), no mixed-case
/// annotation. The list's entries are already in lower case.
public enum Punycode {
    /// Why a string could not be converted.
    public enum Failure: Error, Hashable, Sendable, CustomStringConvertible {
        /// An integer of the algorithm overflowed (RFC 3492 §6.4): the input is too long or too strange.
        case overflow
        /// Encoded input that is not Punycode: a character that is no base-36 digit, or a number that ends early.
        case malformed
        /// A decoded code point that is not a Unicode scalar (a surrogate or above U+10FFFF).
        case notAScalar

        public var description: String {
            switch self {
            case .overflow: "the label is too long for Punycode"
            case .malformed: "the label is not well-formed Punycode"
            case .notAScalar: "the Punycode decodes to a number that is not a Unicode character"
            }
        }
    }

    /// The ACE prefix that marks a Punycode label in a host name (RFC 3490 §5).
    public static let acePrefix = "xn--"

    // RFC 3492 §5: the parameter values for Punycode.
    private static let base: UInt32 = 36
    private static let tMin: UInt32 = 1
    private static let tMax: UInt32 = 26
    private static let skew: UInt32 = 38
    private static let damp: UInt32 = 700
    private static let initialBias: UInt32 = 72
    private static let initialN: UInt32 = 0x80
    private static let delimiter = UInt8(ascii: "-")

    /// The Punycode of `scalars` (RFC 3492 §6.3), without the `xn--` prefix: the basic (ASCII) code points as they
    /// are, then `-` if there were any, then the deltas in lower-case base-36 digits.
    public static func encode(_ scalars: some Collection<Unicode.Scalar>) throws(Failure) -> String {
        let input = scalars.map(\.value)
        var output = input.filter { $0 < initialN }.map { UInt8($0) }
        let basicCount = UInt32(output.count)
        if basicCount > 0 { output.append(delimiter) }

        var n = initialN
        var delta: UInt32 = 0
        var bias = initialBias
        var handled = basicCount
        while handled < UInt32(input.count) {
            // The smallest code point not handled yet; there is one, since fewer than all are handled.
            let next = input.filter { $0 >= n }.min()!
            let (scaled, overflowed) = (next - n).multipliedReportingOverflow(by: handled + 1)
            guard !overflowed, delta <= UInt32.max - scaled else { throw .overflow }
            delta += scaled
            n = next
            for code in input {
                if code < n {
                    guard delta < UInt32.max else { throw .overflow }
                    delta += 1
                }
                guard code == n else { continue }
                var q = delta
                var k = base
                while true {
                    let t = threshold(k, bias: bias)
                    if q < t { break }
                    output.append(digit(t + (q - t) % (base - t)))
                    q = (q - t) / (base - t)
                    k += base
                }
                output.append(digit(q))
                bias = adapt(delta, points: handled + 1, first: handled == basicCount)
                delta = 0
                handled += 1
            }
            delta += 1
            n += 1
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The code points `text` encodes (RFC 3492 §6.2), `text` being Punycode without the `xn--` prefix.
    ///
    /// Upper-case digits are read as lower-case ones, as the RFC allows; there is no mixed-case annotation.
    public static func decode(_ text: some StringProtocol) throws(Failure) -> [Unicode.Scalar] {
        let bytes = Array(text.utf8)
        guard bytes.allSatisfy({ $0 < 0x80 }) else { throw .malformed }
        let split = bytes.lastIndex(of: delimiter)
        var output = split.map { Array(bytes[..<$0]).map(UInt32.init) } ?? []
        var position = split.map { $0 + 1 } ?? 0

        var n = initialN
        var i: UInt32 = 0
        var bias = initialBias
        while position < bytes.count {
            let oldI = i
            var weight: UInt32 = 1
            var k = base
            while true {
                guard position < bytes.count, let value = digitValue(bytes[position]) else { throw .malformed }
                position += 1
                let (product, overflowed) = value.multipliedReportingOverflow(by: weight)
                guard !overflowed, i <= UInt32.max - product else { throw .overflow }
                i += product
                let t = threshold(k, bias: bias)
                if value < t { break }
                let (nextWeight, weightOverflowed) = weight.multipliedReportingOverflow(by: base - t)
                guard !weightOverflowed else { throw .overflow }
                weight = nextWeight
                k += base
            }
            let length = UInt32(output.count + 1)
            bias = adapt(i - oldI, points: length, first: oldI == 0)
            guard i / length <= UInt32.max - n else { throw .overflow }
            n += i / length
            i %= length
            guard n >= initialN else { throw .malformed }
            output.insert(n, at: Int(i))
            i += 1
        }
        var scalars: [Unicode.Scalar] = []
        scalars.reserveCapacity(output.count)
        for code in output {
            guard let scalar = Unicode.Scalar(code) else { throw .notAScalar }
            scalars.append(scalar)
        }
        return scalars
    }

    /// The label as DNS carries it: ASCII labels in lower case, other labels as `xn--` and their Punycode.
    ///
    /// Only ASCII letters are lowered; other characters are encoded as they are.
    public static func asciiLabel(_ label: some StringProtocol) throws(Failure) -> String {
        if label.utf8.allSatisfy({ $0 < 0x80 }) { return asciiLowercased(label) }
        let scalars = label.unicodeScalars.map { scalar in
            scalar.isASCII ? Unicode.Scalar(UInt8(ascii: scalar).asciiLowercased) : scalar
        }
        return acePrefix + (try encode(scalars))
    }

    /// RFC 3492 §6.1: the bias after each delta.
    private static func adapt(_ delta: UInt32, points: UInt32, first: Bool) -> UInt32 {
        var delta = first ? delta / damp : delta / 2
        delta += delta / points
        var k: UInt32 = 0
        while delta > ((base - tMin) * tMax) / 2 {
            delta /= base - tMin
            k += base
        }
        return k + (((base - tMin + 1) * delta) / (delta + skew))
    }

    private static func threshold(_ k: UInt32, bias: UInt32) -> UInt32 {
        if k <= bias { return tMin }
        if k >= bias + tMax { return tMax }
        return k - bias
    }

    /// 0–25 are `a`–`z`, 26–35 are `0`–`9`.
    private static func digit(_ value: UInt32) -> UInt8 {
        value < 26 ? UInt8(ascii: "a") + UInt8(value) : UInt8(ascii: "0") + UInt8(value - 26)
    }

    private static func digitValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"): UInt32(byte - UInt8(ascii: "a"))
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): UInt32(byte - UInt8(ascii: "A"))
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0")) + 26
        default: nil
        }
    }
}

extension UInt8 {
    /// An ASCII upper-case letter in lower case; every other byte as it is.
    var asciiLowercased: UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self) ? self + 0x20 : self
    }
}

/// ASCII text with its upper-case letters lowered.
func asciiLowercased(_ text: some StringProtocol) -> String {
    String(decoding: text.utf8.map(\.asciiLowercased), as: UTF8.self)
}
