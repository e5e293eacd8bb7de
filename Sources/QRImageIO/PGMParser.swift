/// A strict reader for Netpbm graymaps (`man 5 pgm`): binary `P5` and plain `P2`, one image per file.
///
/// The header is the magic number, then width, height and maxval in ASCII decimal, separated by whitespace;
/// a `#` starts a comment that runs to the end of the line and may appear anywhere before maxval. Exactly one
/// whitespace byte follows maxval in `P5`, then `width × height` samples of one byte (maxval < 256) or two
/// big-endian bytes. In `P2`, the samples are decimal numbers separated by whitespace. Samples above maxval,
/// missing samples and anything after the last sample but whitespace (`P2`) are errors.
struct PGMParser {
    private let bytes: [UInt8]
    private let path: String?
    private var index = 0

    /// Parses `bytes`; `path` only names the file in errors.
    static func parse(_ bytes: [UInt8], path: String?) throws(QRImageError) -> GrayImage {
        var parser = PGMParser(bytes: bytes, path: path)
        return try parser.parseImage()
    }

    private init(bytes: [UInt8], path: String?) {
        self.bytes = bytes
        self.path = path
    }

    private mutating func parseImage() throws(QRImageError) -> GrayImage {
        guard bytes.count >= 2, bytes[0] == UInt8(ascii: "P") else { throw invalid("no PGM magic number") }
        let binary: Bool
        switch bytes[1] {
        case UInt8(ascii: "5"): binary = true
        case UInt8(ascii: "2"): binary = false
        default: throw invalid("magic number P\(Character(Unicode.Scalar(bytes[1]))) is not P2 or P5")
        }
        index = 2
        let width = try headerNumber("width")
        let height = try headerNumber("height")
        let maxval = try headerNumber("maxval")
        guard (1...65535).contains(maxval) else { throw invalid("maxval \(maxval) is not in 1…65535") }
        let count = try GrayImage.checkedPixelCount(width: width, height: height)
        guard index < bytes.count, Self.isWhitespace(bytes[index]) else {
            throw invalid(index < bytes.count ? "no whitespace after maxval" : "truncated header")
        }
        let samples =
            binary
            ? try binarySamples(count: count, wide: maxval > 255, maxval: maxval)
            : try plainSamples(count: count, maxval: maxval)
        return try GrayImage(width: width, height: height, pixels: samples)
    }

    /// Separators (at least one whitespace byte or comment), then a decimal number of at most 10 digits.
    private mutating func headerNumber(_ name: String) throws(QRImageError) -> Int {
        var separated = false
        while index < bytes.count {
            if Self.isWhitespace(bytes[index]) {
                index += 1
            } else if bytes[index] == UInt8(ascii: "#") {
                while index < bytes.count, bytes[index] != UInt8(ascii: "\n"), bytes[index] != UInt8(ascii: "\r") {
                    index += 1
                }
            } else {
                break
            }
            separated = true
        }
        guard index < bytes.count else { throw invalid("truncated header: no \(name)") }
        guard separated else { throw invalid("no whitespace before \(name)") }
        guard let value = decimal(maximumDigits: 10) else { throw invalid("\(name) is not a decimal number") }
        return value
    }

    /// The number at `index`, or `nil` when there is no digit there or more than `maximumDigits`.
    private mutating func decimal(maximumDigits: Int) -> Int? {
        let start = index
        var value = 0
        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
            guard index - start < maximumDigits else { return nil }
            value = value * 10 + Int(bytes[index] - UInt8(ascii: "0"))
            index += 1
        }
        return index > start ? value : nil
    }

    private mutating func binarySamples(count: Int, wide: Bool, maxval: Int) throws(QRImageError) -> [UInt8] {
        let start = index + 1
        let needed = wide ? 2 * count : count
        let available = bytes.count - start
        guard available >= needed else { throw invalid("truncated raster: \(available) of \(needed) bytes") }
        guard available == needed else { throw invalid("data after the raster (\(available - needed) bytes)") }
        var pixels = [UInt8](repeating: 0, count: count)
        for pixel in 0..<count {
            let sample =
                wide
                ? Int(bytes[start + 2 * pixel]) << 8 | Int(bytes[start + 2 * pixel + 1])
                : Int(bytes[start + pixel])
            guard sample <= maxval else { throw invalid("sample \(sample) exceeds maxval \(maxval)") }
            pixels[pixel] = Self.scaled(sample, maxval: maxval)
        }
        return pixels
    }

    private mutating func plainSamples(count: Int, maxval: Int) throws(QRImageError) -> [UInt8] {
        // Each sample takes at least a digit and a separator: refuse before allocating for a short file.
        let available = bytes.count - index
        guard available / 2 >= count else {
            throw invalid("truncated raster: \(available) bytes cannot hold \(count) samples")
        }
        var pixels = [UInt8](repeating: 0, count: count)
        for pixel in 0..<count {
            let before = index
            skipWhitespace()
            guard index < bytes.count else { throw invalid("truncated raster: \(pixel) of \(count) samples") }
            guard index > before else { throw invalid("no whitespace before sample \(pixel)") }
            guard let sample = decimal(maximumDigits: 5) else {
                throw invalid("sample \(pixel) is not a decimal number of at most 5 digits")
            }
            guard sample <= maxval else { throw invalid("sample \(sample) exceeds maxval \(maxval)") }
            pixels[pixel] = Self.scaled(sample, maxval: maxval)
        }
        skipWhitespace()
        guard index == bytes.count else { throw invalid("data after the last of \(count) samples") }
        return pixels
    }

    private mutating func skipWhitespace() {
        while index < bytes.count, Self.isWhitespace(bytes[index]) { index += 1 }
    }

    /// Netpbm whitespace: space, TAB, LF, VT, FF and CR.
    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || (0x09...0x0D).contains(byte)
    }

    /// A sample scaled from `0…maxval` to `0…255`, rounded.
    private static func scaled(_ sample: Int, maxval: Int) -> UInt8 {
        UInt8((sample * 255 + maxval / 2) / maxval)
    }

    private func invalid(_ reason: String) -> QRImageError {
        .invalidPGM(path: path, reason: reason)
    }
}
