//! The FUSE floor: an in-memory filesystem that keeps names and sizes and
//! throws the data away, mounted with mnemofs's own options. Reads return
//! zeros up to the file's size, from memory, so opening and reading a file
//! costs only the kernel round trips.
//!
//! Creating a file through any FUSE mount costs the same kernel round trips
//! (a lookup of the new name, the create, each write, then a release), and
//! on some machines waking the daemon and waking the caller again cost far
//! more than the work a local filesystem does. Timing this filesystem next
//! to mnemofs, in the same run, tells how much of the mount's cost is its
//! own and how much any FUSE filesystem would pay on this machine.
//!
//! Given a backing directory, the floor stores what is written, as the
//! simplest passthrough filesystem would: a lookup of a name it does not
//! know asks the backing directory, and a create, each write and a release
//! are the backing file's own. That tells what any FUSE filesystem that
//! keeps its files on a local disk pays for a new file, before it indexes
//! or keeps anything.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::{DirBuilder, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use super::{READY_TIMEOUT, cpu_seconds_of, is_mounted, stop_server};

use fuser::{
    Config, Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo,
    LockOwner, MountOption, OpenFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyEmpty, ReplyEntry,
    ReplyOpen, ReplyWrite, Request, SessionACL, WriteFlags,
};

/// What reads return: more than the kernel asks for at once.
static ZEROS: [u8; 1 << 20] = [0; 1 << 20];

/// Same attribute and entry lifetime as mnemofs's default.
const TTL: Duration = Duration::from_secs(10);

#[derive(Default)]
struct Tree {
    nodes: HashMap<u64, FileAttr>,
    names: HashMap<(u64, OsString), u64>,
    /// Each node's path below the root, for a storing floor.
    paths: HashMap<u64, PathBuf>,
    next: u64,
}

/// Where a storing floor keeps its files, and its open ones.
struct Backing {
    root: PathBuf,
    files: Mutex<HashMap<u64, Arc<File>>>,
    next_fh: AtomicU64,
}

/// The filesystem itself.
pub struct NullFs {
    tree: Mutex<Tree>,
    backing: Option<Backing>,
}

fn io_errno(e: &io::Error) -> Errno {
    Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))
}

fn attr(ino: u64, kind: FileType, perm: u16) -> FileAttr {
    let now = SystemTime::now();
    FileAttr {
        ino: INodeNo(ino),
        size: 0,
        blocks: 0,
        atime: now,
        mtime: now,
        ctime: now,
        crtime: now,
        kind,
        perm,
        nlink: if kind == FileType::Directory { 2 } else { 1 },
        // SAFETY: getuid/getgid cannot fail.
        uid: unsafe { libc::getuid() },
        gid: unsafe { libc::getgid() },
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}

impl NullFs {
    /// A floor that keeps no data, or, with `backing`, one that stores
    /// its files there.
    fn new(backing: Option<PathBuf>) -> NullFs {
        let mut tree = Tree {
            next: 2,
            ..Tree::default()
        };
        tree.nodes.insert(1, attr(1, FileType::Directory, 0o755));
        tree.paths.insert(1, PathBuf::new());
        NullFs {
            tree: Mutex::new(tree),
            backing: backing.map(|root| Backing {
                root,
                files: Mutex::new(HashMap::new()),
                next_fh: AtomicU64::new(1),
            }),
        }
    }

    /// A storing floor's open backing file, by handle (the map's lock is
    /// not held while it is read or written).
    fn open_file(backing: &Backing, fh: FileHandle) -> Result<Arc<File>, Errno> {
        let files = backing.files.lock().map_err(|_| Errno::EIO)?;
        files.get(&fh.0).cloned().ok_or(Errno::EBADF)
    }

    /// Keeps a storing floor's open backing file; returns its handle.
    fn keep_open(backing: &Backing, file: File) -> u64 {
        let fh = backing.next_fh.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut files) = backing.files.lock() {
            files.insert(fh, Arc::new(file));
        }
        fh
    }

    /// Where `name` in `parent` is stored, for a storing floor.
    fn backing_path(&self, parent: INodeNo, name: &OsStr) -> Result<Option<PathBuf>, Errno> {
        let Some(backing) = &self.backing else {
            return Ok(None);
        };
        let tree = self.tree.lock().map_err(|_| Errno::EIO)?;
        let dir = tree.paths.get(&parent.0).ok_or(Errno::ENOENT)?;
        Ok(Some(backing.root.join(dir).join(name)))
    }

    fn add(
        &self,
        parent: INodeNo,
        name: &OsStr,
        kind: FileType,
        mode: u32,
    ) -> Result<FileAttr, Errno> {
        let mut tree = self.tree.lock().map_err(|_| Errno::EIO)?;
        let key = (parent.0, name.to_os_string());
        if tree.names.contains_key(&key) {
            return Err(Errno::EEXIST);
        }
        let ino = tree.next;
        tree.next += 1;
        let a = attr(ino, kind, (mode & 0o7777) as u16);
        if self.backing.is_some()
            && let Some(dir) = tree.paths.get(&parent.0)
        {
            let path = dir.join(name);
            tree.paths.insert(ino, path);
        }
        tree.nodes.insert(ino, a);
        tree.names.insert(key, ino);
        Ok(a)
    }
}

impl Filesystem for NullFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let Ok(tree) = self.tree.lock() else {
            return reply.error(Errno::EIO);
        };
        if let Some(a) = tree
            .names
            .get(&(parent.0, name.to_os_string()))
            .and_then(|ino| tree.nodes.get(ino))
        {
            return reply.entry(&TTL, a, Generation(0));
        }
        drop(tree);
        // A name the floor does not know: a storing floor asks its backing
        // directory, as a passthrough filesystem does for every lookup.
        match self.backing_path(parent, name) {
            // Only what was made through the floor is served.
            Ok(Some(path)) => match std::fs::symlink_metadata(&path) {
                Ok(_) => reply.error(Errno::EIO),
                Err(e) => reply.error(io_errno(&e)),
            },
            Ok(None) => reply.error(Errno::ENOENT),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let Ok(tree) = self.tree.lock() else {
            return reply.error(Errno::EIO);
        };
        match tree.nodes.get(&ino.0) {
            Some(a) => reply.attr(&TTL, a),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        match self.backing_path(parent, name) {
            Ok(Some(path)) => {
                if let Err(e) = DirBuilder::new().mode(mode & 0o7777).create(&path) {
                    return reply.error(io_errno(&e));
                }
            }
            Ok(None) => {}
            Err(e) => return reply.error(e),
        }
        match self.add(parent, name, FileType::Directory, mode) {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        _umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        // Write-only opens write directly, as mnemofs's do.
        let open = if flags & libc::O_ACCMODE == libc::O_WRONLY {
            FopenFlags::FOPEN_DIRECT_IO
        } else {
            FopenFlags::empty()
        };
        let fh = match (self.backing_path(parent, name), &self.backing) {
            (Ok(Some(path)), Some(backing)) => {
                let file = OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(mode & 0o7777)
                    .open(&path);
                match file {
                    Ok(file) => NullFs::keep_open(backing, file),
                    Err(e) => return reply.error(io_errno(&e)),
                }
            }
            (Err(e), _) => return reply.error(e),
            _ => 0,
        };
        match self.add(parent, name, FileType::RegularFile, mode) {
            Ok(a) => reply.created(&TTL, &a, Generation(0), FileHandle(fh), open),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        if let Some(backing) = &self.backing {
            let file = match NullFs::open_file(backing, fh) {
                Ok(file) => file,
                Err(e) => return reply.error(e),
            };
            if let Err(e) = file.write_all_at(data, offset) {
                return reply.error(io_errno(&e));
            }
        }
        let Ok(mut tree) = self.tree.lock() else {
            return reply.error(Errno::EIO);
        };
        if let Some(a) = tree.nodes.get_mut(&ino.0) {
            a.size = a.size.max(offset + data.len() as u64);
        }
        reply.written(data.len() as u32);
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        // As mnemofs's opens of an unchanged file: keep the page cache.
        let open = if flags.0 & libc::O_ACCMODE == libc::O_WRONLY {
            FopenFlags::FOPEN_DIRECT_IO
        } else {
            FopenFlags::FOPEN_KEEP_CACHE
        };
        let mut fh = 0;
        if let Some(backing) = &self.backing {
            let path = match self.tree.lock() {
                Ok(tree) => tree.paths.get(&ino.0).map(|p| backing.root.join(p)),
                Err(_) => return reply.error(Errno::EIO),
            };
            let Some(path) = path else {
                return reply.error(Errno::ENOENT);
            };
            let acc = flags.0 & libc::O_ACCMODE;
            let file = OpenOptions::new()
                .read(acc != libc::O_WRONLY)
                .write(acc != libc::O_RDONLY)
                .open(&path);
            match file {
                Ok(file) => fh = NullFs::keep_open(backing, file),
                Err(e) => return reply.error(io_errno(&e)),
            }
        }
        reply.opened(FileHandle(fh), open);
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        if let Some(backing) = &self.backing {
            let file = match NullFs::open_file(backing, fh) {
                Ok(file) => file,
                Err(e) => return reply.error(e),
            };
            let mut buf = vec![0; size as usize];
            return match file.read_at(&mut buf, offset) {
                Ok(n) => reply.data(&buf[..n]),
                Err(e) => reply.error(io_errno(&e)),
            };
        }
        let Ok(tree) = self.tree.lock() else {
            return reply.error(Errno::EIO);
        };
        let Some(a) = tree.nodes.get(&ino.0) else {
            return reply.error(Errno::ENOENT);
        };
        let len = a.size.saturating_sub(offset).min(u64::from(size)) as usize;
        drop(tree);
        reply.data(&ZEROS[..len.min(ZEROS.len())]);
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        // A storing floor closes the backing file.
        if let Some(backing) = &self.backing
            && let Ok(mut files) = backing.files.lock()
        {
            files.remove(&fh.0);
        }
        reply.ok();
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // As mnemofs: no flush round trip at close.
        reply.error(Errno::ENOSYS);
    }
}

/// The environment variable that turns the bench binary into the floor
/// server: it then serves `NullFs` at the given mountpoint until unmounted.
pub const SERVE_ENV: &str = "MNEMOFS_BENCH_NULLFS";
/// With [`SERVE_ENV`]: the backing directory of a storing floor.
pub const BACKING_ENV: &str = "MNEMOFS_BENCH_NULLFS_BACKING";

/// Serves `NullFs` at `mountpoint` in this process until it is unmounted,
/// with mnemofs's default mount options; with `backing`, a storing floor.
pub fn serve(mountpoint: &Path, backing: Option<PathBuf>) -> io::Result<()> {
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::FSName("nullfs".into()),
        MountOption::NoDev,
        MountOption::NoSuid,
    ];
    // As mnemofs's owner-only mount, run by the same user.
    if mnemofs::fs::kernel_checks_permissions(false) {
        config.mount_options.push(MountOption::DefaultPermissions);
    }
    config.acl = SessionACL::Owner;
    config.n_threads = Some(2);
    config.clone_fd = true;
    fuser::Session::new(NullFs::new(backing), mountpoint, &config)?.run()
}

/// A `NullFs` served by a child process, as mnemofs is: a switch between
/// the caller and a server in another process costs more than a switch
/// between threads. Dropping it unmounts.
pub struct NullMount {
    child: Child,
    mountpoint: PathBuf,
}

impl NullMount {
    /// Starts the floor server at `mountpoint` and waits until it is mounted.
    pub fn start(mountpoint: &Path) -> io::Result<NullMount> {
        NullMount::start_with(mountpoint, None)
    }

    /// Starts a storing floor at `mountpoint`, keeping its files in
    /// `backing` (an empty directory).
    pub fn start_storing(mountpoint: &Path, backing: &Path) -> io::Result<NullMount> {
        NullMount::start_with(mountpoint, Some(backing))
    }

    fn start_with(mountpoint: &Path, backing: Option<&Path>) -> io::Result<NullMount> {
        let mut command = Command::new(std::env::current_exe()?);
        command.env(SERVE_ENV, mountpoint).stdin(Stdio::null());
        if let Some(backing) = backing {
            command.env(BACKING_ENV, backing);
        }
        let child = command.spawn()?;
        let mut mount = NullMount {
            child,
            mountpoint: mountpoint.to_path_buf(),
        };
        let deadline = Instant::now() + READY_TIMEOUT;
        while !is_mounted(mountpoint) {
            if let Ok(Some(status)) = mount.child.try_wait() {
                return Err(io::Error::other(format!(
                    "the floor server exited with {status}"
                )));
            }
            if Instant::now() > deadline {
                return Err(io::Error::other("the floor server did not mount in time"));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(mount)
    }

    /// CPU seconds the floor's server has used so far.
    pub fn cpu_seconds(&self) -> Option<f64> {
        cpu_seconds_of(self.child.id())
    }
}

impl Drop for NullMount {
    fn drop(&mut self) {
        stop_server(&mut self.child, &self.mountpoint, false);
    }
}
