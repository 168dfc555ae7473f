//! The filesystem seam: every file the store touches goes through
//! [`FileSystem`] and [`FsFile`], so that tests can put the fault-injecting
//! [`FaultFs`](crate::FaultFs) in place of the real [`StdFs`].

use std::fmt::Debug;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt as _;
use std::path::Path;

/// The directory operations the store needs.
///
/// Paths are those the store builds from the directory given to
/// [`DiskStore::open`](crate::DiskStore::open); an implementation need not
/// handle anything else. Every method reports failure as an
/// [`io::Error`], whose raw OS error (EIO, ENOSPC, ...) the store keeps in
/// its own errors.
pub trait FileSystem: Send + Sync + Debug {
    /// Creates `dir` and its missing parents (`mkdir -p`).
    ///
    /// # Errors
    /// Whatever the filesystem reports.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;

    /// Creates the file `path` (truncating it if it exists) and opens it
    /// for reading and writing. Its name is durable only once its
    /// directory is synced with [`FileSystem::sync_dir`].
    ///
    /// # Errors
    /// Whatever the filesystem reports.
    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>>;

    /// Opens the existing file `path` for reading and writing.
    ///
    /// # Errors
    /// [`io::ErrorKind::NotFound`] if there is no such file; whatever else
    /// the filesystem reports.
    fn open(&self, path: &Path) -> io::Result<Box<dyn FsFile>>;

    /// Renames `from` to `to`, replacing `to`. Durable once the directory
    /// is synced.
    ///
    /// # Errors
    /// Whatever the filesystem reports.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;

    /// Removes the file `path`. Durable once the directory is synced.
    ///
    /// # Errors
    /// Whatever the filesystem reports.
    fn remove(&self, path: &Path) -> io::Result<()>;

    /// The names of the files in `dir` (not their paths), in no order.
    ///
    /// # Errors
    /// Whatever the filesystem reports.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;

    /// Makes the entries of `dir` (files created, renamed or removed in it)
    /// durable (`fsync` of the directory).
    ///
    /// # Errors
    /// Whatever the filesystem reports.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;

    /// Takes an exclusive lock on `path` (created if missing), held until
    /// the returned guard is dropped.
    ///
    /// # Errors
    /// [`io::ErrorKind::WouldBlock`] if the lock is held by another
    /// process or another open of the same path; whatever else the
    /// filesystem reports.
    fn lock(&self, path: &Path) -> io::Result<Box<dyn FsLock>>;
}

/// An open file.
pub trait FsFile: Send + Sync + Debug {
    /// Reads up to `buf.len()` bytes at `offset` and returns how many were
    /// read: fewer only at the end of the file.
    ///
    /// # Errors
    /// Whatever the filesystem reports.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;

    /// Writes all of `buf` at `offset`, growing the file if needed. The
    /// data is durable only after [`FsFile::sync`]. On error, any prefix of
    /// `buf` may have been written.
    ///
    /// # Errors
    /// Whatever the filesystem reports (EIO, ENOSPC, ...).
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;

    /// The size of the file in bytes.
    ///
    /// # Errors
    /// Whatever the filesystem reports.
    fn size(&self) -> io::Result<u64>;

    /// Truncates or extends (with zeros) the file to `len` bytes.
    ///
    /// # Errors
    /// Whatever the filesystem reports.
    fn set_len(&self, len: u64) -> io::Result<()>;

    /// Makes the file at least `len` bytes long, with the blocks reserved
    /// where the filesystem supports it (`fallocate`), so that later
    /// writes inside it cannot fail for lack of space. The new bytes read
    /// as zeros.
    ///
    /// # Errors
    /// ENOSPC if there is not enough room; whatever else the filesystem
    /// reports.
    fn allocate(&self, len: u64) -> io::Result<()>;

    /// Writes all of `buf` at `offset` past the page cache (`O_DIRECT`)
    /// if this file allows it, and returns whether it did. `Ok(false)`
    /// means nothing was written and direct writes are not available here:
    /// the caller writes the bytes with [`FsFile::write_at`] instead.
    ///
    /// `offset`, `buf.len()` and the address of `buf` must be multiples of
    /// [`DIRECT_ALIGN`]. The data is durable only after [`FsFile::sync`],
    /// as with `write_at` (the device may hold it in a volatile cache), and
    /// on error any prefix of `buf` may have been written. The default
    /// implementation supports no direct writes.
    ///
    /// # Errors
    /// Whatever the filesystem reports (EIO, ENOSPC, ...).
    fn write_direct_at(&self, buf: &[u8], offset: u64) -> io::Result<bool> {
        let _ = (buf, offset);
        Ok(false)
    }

    /// Makes the file's data durable (`fdatasync`).
    ///
    /// # Errors
    /// Whatever the filesystem reports. After a failure the data written
    /// since the last successful sync may be lost even though reads still
    /// return it: callers must not retry and trust a later success.
    fn sync(&self) -> io::Result<()>;
}

/// The alignment of the offset, the length and the memory of a
/// [`FsFile::write_direct_at`]: the page size, a multiple of the logical
/// block size of the devices Linux supports direct I/O on.
pub const DIRECT_ALIGN: usize = 4096;

/// A lock taken with [`FileSystem::lock`]; dropping it releases the lock.
pub trait FsLock: Send + Sync + Debug {}

/// Reads the whole of `file`.
///
/// # Errors
/// Whatever the filesystem reports.
pub fn read_all(file: &dyn FsFile) -> io::Result<Vec<u8>> {
    let size = file.size()?;
    let len = usize::try_from(size)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "file too large to read"))?;
    let mut buf = vec![0u8; len];
    let mut done = 0;
    while done < len {
        let n = file.read_at(&mut buf[done..], done as u64)?;
        if n == 0 {
            break;
        }
        done += n;
    }
    buf.truncate(done);
    Ok(buf)
}

/// The real filesystem, over [`std::fs`].
#[derive(Debug, Default, Clone, Copy)]
pub struct StdFs;

#[derive(Debug)]
struct StdFile {
    file: File,
    /// The file's path, to open it a second time for direct writes.
    path: std::path::PathBuf,
    /// That second descriptor (`O_DIRECT`), opened at the first direct
    /// write; `None` if the filesystem refused it.
    direct: std::sync::OnceLock<Option<File>>,
    /// Set when the filesystem refused a direct write (EINVAL): every later
    /// one is declined at once.
    direct_refused: std::sync::atomic::AtomicBool,
}

impl StdFile {
    fn new(file: File, path: &Path) -> StdFile {
        StdFile {
            file,
            path: path.to_path_buf(),
            direct: std::sync::OnceLock::new(),
            direct_refused: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// The `O_DIRECT` descriptor, opened on first use.
    fn direct_file(&self) -> Option<&File> {
        self.direct
            .get_or_init(|| {
                #[cfg(target_os = "linux")]
                {
                    use std::os::unix::fs::OpenOptionsExt as _;
                    OpenOptions::new()
                        .write(true)
                        .custom_flags(libc::O_DIRECT)
                        .open(&self.path)
                        .ok()
                }
                #[cfg(not(target_os = "linux"))]
                None
            })
            .as_ref()
    }
}

#[derive(Debug)]
struct StdLock {
    /// Held for its lock, released when dropped (closing the descriptor).
    _file: File,
}

impl FsLock for StdLock {}

/// Linux's EINVAL: a direct write the filesystem does not take.
const EINVAL: i32 = 22;

/// Linux's EOPNOTSUPP: `fallocate` is not supported by this filesystem.
const EOPNOTSUPP: i32 = 95;

impl FileSystem for StdFs {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    fn create(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        Ok(Box::new(StdFile::new(f, path)))
    }

    fn open(&self, path: &Path) -> io::Result<Box<dyn FsFile>> {
        let f = OpenOptions::new().read(true).write(true).open(path)?;
        Ok(Box::new(StdFile::new(f, path)))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                if let Some(name) = entry.file_name().to_str() {
                    names.push(name.to_owned());
                }
            }
        }
        Ok(names)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn lock(&self, path: &Path) -> io::Result<Box<dyn FsLock>> {
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        // Called through the trait: std's own `File::try_lock` (Rust 1.89)
        // would shadow it, and our MSRV is older.
        match fs4::FileExt::try_lock(&f) {
            Ok(()) => Ok(Box::new(StdLock { _file: f })),
            Err(fs4::TryLockError::WouldBlock) => Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                "the store is locked by another open",
            )),
            Err(fs4::TryLockError::Error(e)) => Err(e),
        }
    }
}

impl FsFile for StdFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            match self.file.read_at(&mut buf[done..], offset + done as u64) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.file.write_all_at(buf, offset)
    }

    fn write_direct_at(&self, buf: &[u8], offset: u64) -> io::Result<bool> {
        use std::sync::atomic::Ordering::Relaxed;
        if self.direct_refused.load(Relaxed) {
            return Ok(false);
        }
        let Some(f) = self.direct_file() else {
            return Ok(false);
        };
        let mut done = 0;
        while done < buf.len() {
            match f.write_at(&buf[done..], offset + done as u64) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // The filesystem or device wants another alignment: nothing
                // was written, and buffered writes will do.
                Err(e) if done == 0 && e.raw_os_error() == Some(EINVAL) => {
                    self.direct_refused.store(true, Relaxed);
                    return Ok(false);
                }
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    fn size(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }

    fn allocate(&self, len: u64) -> io::Result<()> {
        match fs4::FileExt::allocate(&self.file, len) {
            Ok(()) => {}
            // Some filesystems cannot reserve blocks: a sparse extension
            // still gives the zeros recovery expects.
            Err(e) if e.raw_os_error() == Some(EOPNOTSUPP) => {}
            Err(e) => return Err(e),
        }
        if self.file.metadata()?.len() < len {
            self.file.set_len(len)?;
        }
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }
}
