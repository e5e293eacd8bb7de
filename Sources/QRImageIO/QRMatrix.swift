import CQRencode

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The modules of one QR code symbol, encoded by libqrencode: `size × size`, row-major, dark or light.
///
/// A hybrid `FIDO:/` URL is six alphanumeric characters and then only decimal digits, so the default `.automatic`
/// mode, which lets libqrencode split the text into an alphanumeric and a numeric segment, needs a much smaller
/// symbol than byte mode: version 4 (33 × 33) rather than version 8 (49 × 49) for a 174-character URL at level L.
/// Both decode to exactly the same text.
public struct QRMatrix: Hashable, Sendable {
    /// How much of the symbol may be damaged and still decode: about 7, 15, 25 and 30 %.
    public enum ErrorCorrection: Hashable, Sendable, CaseIterable {
        /// Level L, about 7 %: the smallest symbol, enough for a screen.
        case low
        /// Level M, about 15 %.
        case medium
        /// Level Q, about 25 %.
        case quartile
        /// Level H, about 30 %.
        case high
    }

    /// How the text becomes segments of the symbol.
    public enum EncodingMode: Hashable, Sendable, CaseIterable {
        /// libqrencode's own split: numeric, alphanumeric and byte segments as the text allows (case kept).
        case automatic
        /// One byte-mode segment holding the UTF-8 bytes.
        case byte
    }

    /// The number of modules on a side, without any quiet zone: `17 + 4 × version`.
    public let size: Int
    /// The symbol version, 1 to 40.
    public let version: Int
    /// The error correction level the symbol was encoded with.
    public let errorCorrection: ErrorCorrection
    /// `size × size` flags, row by row: `true` for dark.
    private let modules: [Bool]

    /// Encodes `text` in the smallest version that holds it at `errorCorrection`.
    ///
    /// Throws `.textContainsNUL` for a NUL byte, `.textTooLong` when even version 40 is too small.
    public init(
        encoding text: String,
        errorCorrection: ErrorCorrection = .low,
        mode: EncodingMode = .automatic
    ) throws(QRImageError) {
        guard !text.utf8.contains(0) else { throw .textContainsNUL }
        let level: QRecLevel =
            switch errorCorrection {
            case .low: QR_ECLEVEL_L
            case .medium: QR_ECLEVEL_M
            case .quartile: QR_ECLEVEL_Q
            case .high: QR_ECLEVEL_H
            }
        errno = 0
        let code: UnsafeMutablePointer<QRcode>? =
            switch mode {
            // The hint must be QR_MODE_8 or QR_MODE_KANJI; with QR_MODE_8, digits and capitals still get
            // numeric and alphanumeric segments. Case-sensitive, so `fido:/` is not upper-cased.
            case .automatic: QRcode_encodeString(text, 0, level, QR_MODE_8, 1)
            case .byte: QRcode_encodeString8bit(text, 0, level)
            }
        guard let code else {
            if errno == ERANGE { throw .textTooLong(byteCount: text.utf8.count) }
            throw .encodingFailed(errno: errno)
        }
        defer { QRcode_free(code) }
        let size = Int(code.pointee.width)
        let data = UnsafeBufferPointer(start: code.pointee.data, count: size * size)
        self.size = size
        self.version = Int(code.pointee.version)
        self.errorCorrection = errorCorrection
        // Bit 0 is the module's colour; the other bits say which function pattern it belongs to.
        self.modules = data.map { $0 & 1 == 1 }
    }

    /// Whether the module at column `x`, row `y` is dark. Coordinates outside the symbol (the quiet zone) are light.
    public func isDark(x: Int, y: Int) -> Bool {
        guard (0..<size).contains(x), (0..<size).contains(y) else { return false }
        return modules[y * size + x]
    }

    /// The symbol drawn as 8-bit gray pixels: each module `moduleSize` pixels square, dark 0 and light 255, with
    /// `quietZone` light modules around it (the standard asks for 4).
    ///
    /// Throws `.parameterOutOfRange` for a module size outside 1…64 or a quiet zone outside 0…64, and
    /// `.imageTooLarge` when the image would exceed `QRImageReader.maximumPixelCount`.
    public func grayImage(moduleSize: Int = 8, quietZone: Int = 4) throws(QRImageError) -> GrayImage {
        guard (1...64).contains(moduleSize) else { throw .parameterOutOfRange(name: "module size", value: moduleSize) }
        guard (0...64).contains(quietZone) else { throw .parameterOutOfRange(name: "quiet zone", value: quietZone) }
        let side = (size + 2 * quietZone) * moduleSize
        guard side * side <= QRImageReader.maximumPixelCount else { throw .imageTooLarge(width: side, height: side) }
        var pixels = [UInt8](repeating: 255, count: side * side)
        for y in 0..<size {
            for x in 0..<size where modules[y * size + x] {
                let left = (x + quietZone) * moduleSize
                let top = (y + quietZone) * moduleSize
                for row in top..<(top + moduleSize) {
                    let start = row * side + left
                    pixels[start..<(start + moduleSize)] = ArraySlice(repeating: 0, count: moduleSize)
                }
            }
        }
        return try GrayImage(width: side, height: side, pixels: pixels)
    }

    /// The symbol as an 8-bit grayscale PNG; see `grayImage(moduleSize:quietZone:)` for the layout and errors.
    public func pngBytes(moduleSize: Int = 8, quietZone: Int = 4) throws(QRImageError) -> [UInt8] {
        try grayImage(moduleSize: moduleSize, quietZone: quietZone).pngBytes()
    }

    /// Writes `pngBytes(moduleSize:quietZone:)` to `path` atomically (a temporary file in the same directory,
    /// then a rename), mode 0644.
    public func writePNG(to path: String, moduleSize: Int = 8, quietZone: Int = 4) throws(QRImageError) {
        try ImageFile.writeAtomically(pngBytes(moduleSize: moduleSize, quietZone: quietZone), to: path)
    }
}
